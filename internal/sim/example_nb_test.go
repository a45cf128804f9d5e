package sim_test

import (
	"context"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// The simulated Kube-OVN keeps each VPC subnet's router port in the NB
// given as Options.NB.
func ExampleNewOVNNB() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "pxsim-nb-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	srv, err := ovngatewaytest.OpenInMemory(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	admin, err := ovngatewaytest.Dial(ctx, srv.Endpoint())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer admin.Close()

	nb := sim.NewOVNNB(admin)
	h := sim.NewHarness(sim.Options{NB: nb})
	sub := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "subnet-a"}, Spec: kubeovnv1.SubnetSpec{Vpc: "vpc-a", CIDRBlock: "10.0.0.0/24"}}
	if err := h.Client().Create(ctx, sub); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := h.World.React(ctx, h.Client()); err != nil {
		fmt.Println(err)
		return
	}
	ports, err := nb.RouterPorts(ctx)
	fmt.Println(ports, err)
	// Output: map[vpc-a-subnet-a:vpc-a] <nil>
}
