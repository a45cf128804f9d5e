package ovngateway_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

func ExampleRank() {
	members, err := ovngateway.Rank(ovngateway.Key("tenant-a"), []ovngateway.Candidate{
		{Node: "node-3", Chassis: "ch-3"}, {Node: "node-1", Chassis: "ch-1"}, {Node: "node-2", Chassis: "ch-2"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range members {
		fmt.Println(m.Node, m.Priority)
	}
	// Output:
	// node-1 100
	// node-2 90
	// node-3 80
}

func ExampleParseAddress() {
	fmt.Println(ovngateway.ParseAddress("ssl:10.0.0.1:6641, ssl:10.0.0.2:6641"))
	_, err := ovngateway.ParseAddress("ssl:10.0.0.1")
	fmt.Println(errors.Is(err, ovngateway.ErrInvalid))
	// Output:
	// [ssl:10.0.0.1:6641 ssl:10.0.0.2:6641] <nil>
	// true
}

// ExampleClient_Reconcile runs against libovsdb's in-memory NB server: the
// first pass creates the group in one transaction, the second finds nothing
// to do.
func ExampleClient_Reconcile() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "nb")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	nb, err := ovngatewaytest.OpenInMemory(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nb.Close()
	kubeOVN, err := ovngatewaytest.Dial(ctx, nb.Endpoint())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer kubeOVN.Close()
	if _, err := (ovngatewaytest.Admin{C: kubeOVN}).AddRouterPort(ctx, "vpc1", "vpc1-sub1"); err != nil {
		fmt.Println(err)
		return
	}

	c, err := ovngateway.Dial(ctx, ovngateway.Config{Address: nb.Endpoint()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	n := ovngateway.Network{Namespace: "tenant-a", Name: "net1", RouterPort: ovngateway.RouterPortName("vpc1", "sub1")}
	gw, err := ovngateway.NewGateway(n, "vpc1", "pxtenant", []ovngateway.Candidate{{Node: "node-1", Chassis: "ch-1"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		o, err := c.Reconcile(ctx, gw)
		fmt.Println(o.Reason, o.Group, o.Changed, c.Transactions(), err)
	}
	// Output:
	// ChassisAssigned px-vpc1-sub1 true 1 <nil>
	// ChassisAssigned px-vpc1-sub1 false 1 <nil>
}
