package ovngateway_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// converged is the state one network on testPort must reach.
func converged(gw ovngateway.Gateway) ovngatewaytest.State {
	return gatewayState(gw, ovngatewaytest.Port{Group: testGroup})
}

// TestReconcileRepairsDrift: after someone changes the rows of a converged
// network, one pass with one transaction repairs them.
func TestReconcileRepairsDrift(t *testing.T) {
	onEachBackend(t, func(t *testing.T, nb nb) {
		for name, tc := range driftCases() {
			t.Run(name, func(t *testing.T) {
				ovngatewaytest.Reset(t, nb.admin)
				ovngatewaytest.AddRouterPort(t, nb.admin, "vpc1", testPort)
				c := dial(t, nb.endpoint)
				gw := gateway(t, "tenant-a", "net1", "vpc1", "sub1", threeNodes...)
				reconcile(t, c, gw)
				tc.drift(t, nb.admin)
				if err := c.Sync(context.Background()); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(converged(gw), ovngatewaytest.Dump(t, nb.admin)); diff == "" {
					t.Fatalf("%s: the drift must change the rows", tc.reason)
				}
				before := c.Transactions()
				if o := reconcile(t, c, gw); !o.Changed || c.Transactions() != before+1 {
					t.Errorf("%s: the repair must take exactly one transaction: %+v, %d", tc.reason, o, c.Transactions()-before)
				}
				wantRows(t, nb.admin, converged(gw), tc.reason+": rows after the repair")
			})
		}
	})
}

type driftCase struct {
	reason string
	drift  func(t *testing.T, c client.Client)
}

func driftCases() map[string]driftCase {
	return map[string]driftCase{
		"PortCleared": {
			reason: "someone cleared the port's ha_chassis_group",
			drift:  func(t *testing.T, c client.Client) { ovngatewaytest.SetPortGroup(t, c, testPort, "") },
		},
		"PortRecreated": {
			reason: "Kube-OVN deleted and recreated the router port without a group",
			drift: func(t *testing.T, c client.Client) {
				ovngatewaytest.DeleteRouterPort(t, c, testPort)
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
			},
		},
		"PriorityChanged": {
			reason: "someone changed a member's priority",
			drift: func(t *testing.T, c client.Client) {
				rows := ovngatewaytest.Select[nbmodel.HAChassis](t, c)
				h := &rows[0]
				h.Priority = 1
				ops, err := c.Where(h).Update(h, &h.Priority)
				if err != nil {
					t.Fatal(err)
				}
				ovngatewaytest.Transact(t, c, ops...)
			},
		},
		"MemberRemoved": {
			reason: "someone removed a member from the group",
			drift: func(t *testing.T, c client.Client) {
				g := &ovngatewaytest.Select[nbmodel.HAChassisGroup](t, c)[0]
				g.HaChassis = g.HaChassis[1:]
				ops, err := c.Where(g).Update(g, &g.HaChassis)
				if err != nil {
					t.Fatal(err)
				}
				ovngatewaytest.Transact(t, c, ops...)
			},
		},
	}
}

// TestReconcileFollowsTrunkNodes: nodes join and leave; each pass leaves
// exactly the ranked chassis in the group, with one transaction per change.
func TestReconcileFollowsTrunkNodes(t *testing.T) {
	steps := [][]string{
		{"node-1"},
		{"node-1", "node-2", "node-3"},
		{"node-2", "node-3"},
		{"node-2", "node-3", "node-4", "node-5", "node-6", "node-7", "node-8", "node-9", "node-10", "node-11", "node-12"},
		{"node-12"},
		{"node-1", "node-12"},
	}
	onEachBackend(t, func(t *testing.T, nb nb) {
		ovngatewaytest.AddRouterPort(t, nb.admin, "vpc1", testPort)
		c := dial(t, nb.endpoint)
		for i, nodes := range steps {
			gw := gateway(t, "tenant-a", "net1", "vpc1", "sub1", nodes...)
			before := c.Transactions()
			o := reconcile(t, c, gw)
			if !o.Changed || c.Transactions() != before+1 {
				t.Errorf("step %d %v: want one write transaction, got %+v after %d", i, nodes, o, c.Transactions()-before)
			}
			wantRows(t, nb.admin, converged(gw), fmt.Sprintf("step %d %v", i, nodes))
		}
	})
}

// TestRelease: the owned group goes and the port is cleared; foreign and
// missing groups need nothing.
func TestRelease(t *testing.T) {
	onEachBackend(t, func(t *testing.T, nb nb) {
		ovngatewaytest.AddRouterPort(t, nb.admin, "vpc1", testPort)
		ovngatewaytest.AddRouterPort(t, nb.admin, "vpc1", "vpc1-sub2")
		ovngatewaytest.AddRouterPort(t, nb.admin, "vpc1", "vpc1-sub3")
		c := dial(t, nb.endpoint)
		ctx := context.Background()
		gw := gateway(t, "tenant-a", "net1", "vpc1", "sub1", threeNodes...)
		reconcile(t, c, gw)
		// Someone pointed a second port at our group; release clears it too.
		ovngatewaytest.SetPortGroup(t, nb.admin, "vpc1-sub2", ovngatewaytest.GroupUUID(t, nb.admin, testGroup))
		foreign := ovngatewaytest.AddGroup(t, nb.admin, "px-vpc1-sub3", map[string]string{ovngateway.OwnerKey: "kube-ovn"})
		ovngatewaytest.SetPortGroup(t, nb.admin, "vpc1-sub3", foreign)
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}

		r, err := c.Release(ctx, gw.Network)
		if err != nil || !r.Deleted {
			t.Fatalf("Release(owned): %+v, %v", r, err)
		}
		r, err = c.Release(ctx, gw.Network)
		if err != nil || r != (ovngateway.Released{}) {
			t.Errorf("Release of a released network must find nothing: %+v, %v", r, err)
		}
		other := ovngateway.Network{Namespace: "tenant-a", Name: "net3", RouterPort: "vpc1-sub3"}
		r, err = c.Release(ctx, other)
		if err != nil || r.Deleted || r.Foreign != `OVN HA_Chassis_Group "px-vpc1-sub3" belongs to "kube-ovn"` {
			t.Errorf("Release(foreign): %+v, %v", r, err)
		}
		want := ovngatewaytest.State{
			Groups: map[string]ovngatewaytest.Group{"px-vpc1-sub3": {ExternalIDs: map[string]string{ovngateway.OwnerKey: "kube-ovn"}}},
			Ports:  map[string]ovngatewaytest.Port{testPort: {}, "vpc1-sub2": {}, "vpc1-sub3": {Group: "px-vpc1-sub3"}},
		}
		wantRows(t, nb.admin, want, "rows after Release")
	})
}
