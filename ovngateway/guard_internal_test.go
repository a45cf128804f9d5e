package ovngateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// staleWrite decides on what the cache holds, lets change alter the NB
// behind the client's back, then sends the stale decision.
func staleWrite(t *testing.T, endpoint string, gw Gateway, change func()) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{Address: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.session()
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.view(ctx, gw.Network)
	if err != nil {
		t.Fatal(err)
	}
	p := decide(gw, v)
	if !p.writes() {
		t.Fatalf("the stale decision must write, got %+v", p.outcome)
	}
	tx, err := s.build(gw, v, p)
	if err != nil {
		t.Fatal(err)
	}
	change()
	return s.transact(ctx, tx)
}

func guardGateway() Gateway {
	return Gateway{
		Network: Network{Namespace: "tenant-a", Name: "net1", RouterPort: "vpc1-sub1"},
		Members: []Member{{Node: "n1", Chassis: "ch-n1", Priority: 100}},
	}
}

// TestPointerGuard: a port that got a group or gateway_chassis between the
// read and the write is not overwritten. Only a real ovsdb-server enforces
// the wait (libovsdb's in-memory server skips empty values in wait rows).
func TestPointerGuard(t *testing.T) {
	cases := map[string]struct {
		reason string
		change func(t *testing.T, admin client.Client)
	}{
		"PortGotAGroup": {
			reason: "someone pointed the port at their group meanwhile",
			change: func(t *testing.T, admin client.Client) {
				ovngatewaytest.SetPortGroup(t, admin, "vpc1-sub1", ovngatewaytest.AddGroup(t, admin, "theirs", nil))
			},
		},
		"PortGotGatewayChassis": {
			reason: "someone gave the port gateway_chassis meanwhile",
			change: func(t *testing.T, admin client.Client) {
				ovngatewaytest.AddGatewayChassis(t, admin, "vpc1-sub1", "ch-x", 10)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := ovngatewaytest.StartReal(t)
			admin := ovngatewaytest.Connect(t, s.Endpoint())
			ovngatewaytest.AddRouterPort(t, admin, "vpc1", "vpc1-sub1")
			var after ovngatewaytest.State
			err := staleWrite(t, s.Endpoint(), guardGateway(), func() {
				tc.change(t, admin)
				after = ovngatewaytest.Dump(t, admin)
			})
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("%s: the stale write must fail with ErrConflict, got %v", tc.reason, err)
			}
			if diff := cmp.Diff(after, ovngatewaytest.Dump(t, admin)); diff != "" {
				t.Errorf("%s: the refused transaction must change nothing: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAdoptGuard: a group tagged by someone else between the read and the
// write keeps their tag.
func TestAdoptGuard(t *testing.T) {
	starts := map[string]func(t *testing.T) string{
		"InMemory": func(t *testing.T) string { return ovngatewaytest.StartInMemory(t).Endpoint() },
		"Real":     func(t *testing.T) string { return ovngatewaytest.StartReal(t).Endpoint() },
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			endpoint := start(t)
			admin := ovngatewaytest.Connect(t, endpoint)
			ovngatewaytest.AddRouterPort(t, admin, "vpc1", "vpc1-sub1")
			uuid := ovngatewaytest.AddGroup(t, admin, "px-vpc1-sub1", map[string]string{"note": "x"})
			var after ovngatewaytest.State
			err := staleWrite(t, endpoint, guardGateway(), func() {
				g := &nbmodel.HAChassisGroup{UUID: uuid, ExternalIDs: map[string]string{"note": "x", OwnerKey: "someone"}}
				ops, err := admin.Where(g).Update(g, &g.ExternalIDs)
				if err != nil {
					t.Fatal(err)
				}
				ovngatewaytest.Transact(t, admin, ops...)
				after = ovngatewaytest.Dump(t, admin)
			})
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("the stale adoption must fail with ErrConflict, got %v", err)
			}
			if diff := cmp.Diff(after, ovngatewaytest.Dump(t, admin)); diff != "" {
				t.Errorf("the refused adoption must change nothing: -want +got:\n%s", diff)
			}
		})
	}
}

// TestBatchConflictFallsBack: when the server refuses a batch because one
// network's rows changed after they were read, every other network of the
// batch still converges, and the changed one ends as the rows now say.
func TestBatchConflictFallsBack(t *testing.T) {
	s := ovngatewaytest.StartReal(t)
	admin := ovngatewaytest.Connect(t, s.Endpoint())
	var gws []Gateway
	for _, sub := range []string{"a", "b", "c"} {
		port := RouterPortName("vpc1", sub)
		ovngatewaytest.AddRouterPort(t, admin, "vpc1", port)
		gws = append(gws, Gateway{
			Network: Network{Namespace: "tenant", Name: sub, RouterPort: port},
			Members: []Member{{Node: "n1", Chassis: "ch-n1", Priority: 100}},
		})
	}
	ctx, c := dialInternal(t, s.Endpoint())
	sess, err := c.session()
	if err != nil {
		t.Fatal(err)
	}
	outs, errs := make([]Outcome, 3), make([]error, 3)
	tx, pending, _ := sess.planBatch(ctx, gws, outs, errs)
	// Someone points vpc1-b at their own group before the batch is sent.
	ovngatewaytest.SetPortGroup(t, admin, "vpc1-b", ovngatewaytest.AddGroup(t, admin, "theirs", nil))
	sess.commitBatch(ctx, tx, pending, gws, outs, errs)
	for i, want := range []Reason{ReasonChassisAssigned, ReasonForeignGroup, ReasonChassisAssigned} {
		if errs[i] != nil || outs[i].Reason != want {
			t.Errorf("network %s: %+v, %v; want %s", gws[i].Name, outs[i], errs[i], want)
		}
	}
	st := ovngatewaytest.Dump(t, admin)
	want := map[string]ovngatewaytest.Port{"vpc1-a": {Group: "px-vpc1-a"}, "vpc1-b": {Group: "theirs"}, "vpc1-c": {Group: "px-vpc1-c"}}
	if diff := cmp.Diff(want, st.Ports); diff != "" {
		t.Errorf("ports: -want +got:\n%s", diff)
	}
	if n := c.Transactions(); n != 3 {
		t.Errorf("one refused batch and one transaction for each of the two others: want 3, got %d", n)
	}
}
