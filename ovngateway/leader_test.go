package ovngateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestWritesGoToTheLeader: with a comma-separated list of clustered NB
// servers, the client uses the RAFT leader whatever its place in the list,
// and moves to the new leader when the old one steps down.
func TestWritesGoToTheLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := ovngatewaytest.StartInMemory(t), ovngatewaytest.StartInMemory(t)
	adminA, adminB := ovngatewaytest.Connect(t, a.DirectEndpoint()), ovngatewaytest.Connect(t, b.DirectEndpoint())
	ovngatewaytest.AddRouterPort(t, adminA, "vpc1", testPort)
	ovngatewaytest.AddRouterPort(t, adminB, "vpc1", testPort)
	if err := a.SetLeader(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLeader(ctx, true); err != nil {
		t.Fatal(err)
	}
	c := dial(t, a.Endpoint()+","+b.Endpoint())
	if c.Endpoint() != b.Endpoint() {
		t.Fatalf("the client must pick the leader %s, picked %q", b.Endpoint(), c.Endpoint())
	}
	gw := gateway(t, "tenant-a", "net1", "vpc1", "sub1", threeNodes...)
	reconcile(t, c, gw)
	if got := ovngatewaytest.Dump(t, adminB).Ports[testPort].Group; got != testGroup {
		t.Errorf("the leader must hold the write, its port has group %q", got)
	}
	if got := ovngatewaytest.Dump(t, adminA).Ports[testPort].Group; got != "" {
		t.Errorf("the follower must not be written, its port has group %q", got)
	}

	// Leadership moves from b to a.
	if err := a.SetLeader(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLeader(ctx, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.Endpoint() != a.Endpoint() {
		if time.Now().After(deadline) {
			t.Fatalf("the client did not move to the new leader; it uses %q", c.Endpoint())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if o := reconcile(t, c, gw); !o.Changed {
		t.Errorf("the new leader has no group yet, so the pass must write: %+v", o)
	}
	if got := ovngatewaytest.Dump(t, adminA).Ports[testPort].Group; got != testGroup {
		t.Errorf("the new leader must hold the write, its port has group %q", got)
	}
}
