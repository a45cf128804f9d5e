package ovngatewaytest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestNB drives ovngateway through both kinds of test NB: a router port gets
// its group, an outage makes passes fail with ErrNBUnavailable, and after
// recovery a recreated port gets its pointer back.
func TestNB(t *testing.T) {
	starts := map[string]func(testing.TB) *ovngatewaytest.NB{
		"InMemory":    ovngatewaytest.NewInMemory,
		"OVSDBServer": ovngatewaytest.NewOVSDBServer,
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			nb := start(t)
			nb.AddRouterPort(t, "vpc1", "vpc1-sub1")
			c := dial(t, nb.Endpoint())
			n := ovngateway.Network{Namespace: "tenant-a", Name: "net1", RouterPort: "vpc1-sub1"}
			gw, err := ovngateway.NewGateway(n, "vpc1", "pxtenant", []ovngateway.Candidate{{Node: "node-1", Chassis: "ch-1"}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := c.Reconcile(ctx, gw); err != nil {
				t.Fatal(err)
			}
			want := ovngatewaytest.State{
				Groups: map[string]ovngatewaytest.Group{"px-vpc1-sub1": {
					ExternalIDs: map[string]string{"owner": "proxmox-network", "network": "tenant-a/net1"},
					Chassis:     []ovngatewaytest.Chassis{{Name: "ch-1", Priority: 100}},
				}},
				Ports: map[string]ovngatewaytest.Port{"vpc1-sub1": {Group: "px-vpc1-sub1"}},
			}
			if diff := cmp.Diff(want, nb.State(t)); diff != "" {
				t.Errorf("rows after Reconcile: -want +got:\n%s", diff)
			}

			nb.Outage(t)
			deadline := time.Now().Add(10 * time.Second)
			for _, err := c.Reconcile(ctx, gw); !errors.Is(err, ovngateway.ErrNBUnavailable); _, err = c.Reconcile(ctx, gw) {
				if time.Now().After(deadline) {
					t.Fatalf("passes must fail with ErrNBUnavailable during an outage, got %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			nb.Recover(t)
			nb.DeleteRouterPort(t, "vpc1-sub1")
			nb.AddRouterPort(t, "vpc1", "vpc1-sub1")
			for o, err := c.Reconcile(ctx, gw); err != nil || !o.Changed; o, err = c.Reconcile(ctx, gw) {
				if time.Now().After(deadline) {
					t.Fatalf("after recovery the recreated port must get its group back: %+v, %v", o, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if diff := cmp.Diff(want, nb.State(t)); diff != "" {
				t.Errorf("rows after recovery: -want +got:\n%s", diff)
			}
		})
	}
}

// dial connects an ovngateway client to endpoint with short timeouts, as an
// embedder's test would, and closes it on cleanup.
func dial(t testing.TB, endpoint string) *ovngateway.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovngateway.Dial(ctx, ovngateway.Config{
		Address: endpoint, InactivityProbe: 10 * time.Second,
		ReconnectTimeout: 5 * time.Second, MaxBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("cannot dial the test NB: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
