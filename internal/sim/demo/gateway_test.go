package demo

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// finally is an act played after the demo's, before the final checks.
func finally(name string, play func(ctx context.Context, s *Stage) error) []Act {
	return slices.Concat(Acts, []Act{{Name: name, Play: play}})
}

// owned is the group of network id with the ranked chassis.
func owned(id string, chassis ...ovngatewaytest.Chassis) ovngatewaytest.Group {
	return ovngatewaytest.Group{ExternalIDs: map[string]string{"owner": "proxmox-network", "network": id}, Chassis: chassis}
}

// TestDemoGatewayEndState reads the NB rows the demo leaves behind: the
// three networks of tenant alpha each have their port on their own group
// of the two trunk nodes still ready (node-a left), ranked for
// vpc/vpc-tenant-alpha (node-b 100, node-c 90), and nothing of tenant
// beta's released network is left. Each port carries the zone's
// gateway_mtu (1500 - 100 for Geneve) under its network's mark.
func TestDemoGatewayEndState(t *testing.T) {
	var got ovngatewaytest.State
	var out bytes.Buffer
	res, err := play(context.Background(), &out, finally("read the NB", func(ctx context.Context, s *Stage) error {
		var err error
		got, err = s.nb.state(ctx)
		return err
	}), Options{Wide: true})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if !res.OK() {
		t.Fatalf("an invariant failed:\n%s", out.String())
	}
	if !slices.Contains(res.Acts, actGateways.Name) {
		t.Errorf("the gateway act did not run: %v", res.Acts)
	}
	top := []ovngatewaytest.Chassis{{Name: "chassis-b", Priority: 100}, {Name: "chassis-c", Priority: 90}}
	want := ovngatewaytest.State{
		Groups: map[string]ovngatewaytest.Group{
			"px-vpc-tenant-alpha-subnet-a1": owned("tenant-alpha/subnet-a1", top...),
			"px-vpc-tenant-alpha-subnet-a2": owned("tenant-alpha/subnet-a2", top...),
			"px-vpc-tenant-alpha-subnet-a3": owned("tenant-alpha/subnet-a3", top...),
		},
		Ports: map[string]ovngatewaytest.Port{
			"vpc-tenant-alpha-subnet-a1": mtuPort("tenant-alpha/subnet-a1"),
			"vpc-tenant-alpha-subnet-a2": mtuPort("tenant-alpha/subnet-a2"),
			"vpc-tenant-alpha-subnet-a3": mtuPort("tenant-alpha/subnet-a3"),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NB at the end of the demo: -want +got:\n%s", diff)
	}
	text := out.String()
	for _, want := range []string{
		"px-vpc-tenant-alpha-subnet-a1  chassis-a:100 chassis-b:90 chassis-c:80  True/ChassisAssigned", // ranked for alpha's VPC
		"px-vpc-tenant-beta-subnet-b1   chassis-b:100 chassis-a:90 chassis-c:80  True/ChassisAssigned", // and for beta's
		"chassis-a -> chassis-b", // alpha's ports follow the next chassis
		"chassis-b (kept)",       // beta's active chassis stays
		"GatewayReleasePending (deleting)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo output lacks %q:\n%s", want, text)
		}
	}
}

// firstPriority sets the priority of the first HA_Chassis row the NB lists.
func firstPriority(p int) func(ctx context.Context, a ovngatewaytest.Admin) error {
	return func(ctx context.Context, a ovngatewaytest.Admin) error {
		rows, err := a.ReadRows(ctx)
		if err != nil {
			return err
		}
		h := rows.Chassis[0]
		h.Priority = p
		ops, err := a.C.Where(&h).Update(&h, &h.Priority)
		if err != nil {
			return err
		}
		_, err = a.Transact(ctx, ops...)
		return err
	}
}

// retag tags the owned group named group for network id.
func retag(group, id string) func(ctx context.Context, a ovngatewaytest.Admin) error {
	return func(ctx context.Context, a ovngatewaytest.Admin) error {
		g := &nbmodel.HAChassisGroup{Name: group, ExternalIDs: map[string]string{"owner": "proxmox-network", "network": id}}
		ops, err := a.C.Where(g).Update(g, &g.ExternalIDs)
		if err != nil {
			return err
		}
		_, err = a.Transact(ctx, ops...)
		return err
	}
}

// failedInvariants maps each invariant that does not hold to its detail.
func failedInvariants(res Result) map[string]string {
	failed := map[string]string{}
	for _, inv := range res.Invariants {
		if !inv.Holds {
			failed[inv.Name] = inv.Detail
		}
	}
	return failed
}

// TestDemoReportsABrokenGateway corrupts the NB after the last act and
// checks that the final table reports the matching invariant as FAILED.
func TestDemoReportsABrokenGateway(t *testing.T) {
	cases := map[string]struct {
		reason string
		tamper func(ctx context.Context, a ovngatewaytest.Admin) error
		// failed are the invariants that must fail, with text of their detail.
		failed map[string]string
	}{
		"PriorityChanged": {
			reason: "a chassis priority other than the ranked one breaks the group invariant",
			tamper: firstPriority(5),
			failed: map[string]string{CheckGatewayGroups: ":5"},
		},
		"PortCleared": {
			reason: "a router port without its group breaks the group invariant",
			tamper: func(ctx context.Context, a ovngatewaytest.Admin) error {
				return a.SetPortGroup(ctx, "vpc-tenant-alpha-subnet-a2", "")
			},
			failed: map[string]string{CheckGatewayGroups: `router port "vpc-tenant-alpha-subnet-a2" uses group "", want "px-vpc-tenant-alpha-subnet-a2"`},
		},
		"ForeignTag": {
			reason: "a group retagged for a network that does not exist breaks both the group and the release invariants",
			tamper: retag("px-vpc-tenant-alpha-subnet-a3", "tenant-beta/x"),
			failed: map[string]string{
				CheckGatewayGroups:   `network="tenant-beta/x"`,
				CheckGatewayReleased: `belongs to network "tenant-beta/x", which is gone`,
			},
		},
		"GroupLeftBehind": {
			reason: "an owned group of a network that is gone breaks the release invariant",
			tamper: func(ctx context.Context, a ovngatewaytest.Admin) error {
				_, err := a.AddGroup(ctx, "px-vpc-tenant-beta-subnet-b1",
					map[string]string{"owner": "proxmox-network", "network": "tenant-beta/subnet-b1"}, ovngatewaytest.Chassis{Name: "chassis-b", Priority: 100})
				return err
			},
			failed: map[string]string{CheckGatewayReleased: `group "px-vpc-tenant-beta-subnet-b1" belongs to network "tenant-beta/subnet-b1", which is gone`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			res, err := play(context.Background(), &out, finally("corrupt the NB", func(ctx context.Context, s *Stage) error {
				return tc.tamper(ctx, ovngatewaytest.Admin{C: s.nb.admin})
			}), Options{})
			if err != nil {
				t.Fatalf("demo: %v\n%s", err, out.String())
			}
			if res.OK() {
				t.Fatalf("%s: every invariant holds:\n%s", tc.reason, out.String())
			}
			failed := failedInvariants(res)
			if diff := cmp.Diff(slices.Sorted(maps.Keys(tc.failed)), slices.Sorted(maps.Keys(failed))); diff != "" {
				t.Errorf("%s: failed invariants -want +got:\n%s", tc.reason, diff)
			}
			for name, detail := range tc.failed {
				if !strings.Contains(failed[name], detail) {
					t.Errorf("%s: %q failed with %q, want it to say %q", tc.reason, name, failed[name], detail)
				}
			}
			if !strings.Contains(out.String(), "FAILED: ") {
				t.Errorf("%s: the table shows no FAILED row:\n%s", tc.reason, out.String())
			}
		})
	}
}

// TestGatewayReadyCheck judges GatewayReady on live and deleting networks.
func TestGatewayReadyCheck(t *testing.T) {
	net := func(name string, deleting bool, conds ...metav1.Condition) v1alpha1.ProxmoxNetwork {
		n := v1alpha1.ProxmoxNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name}}
		if deleting {
			now := metav1.Now()
			n.DeletionTimestamp = &now
		}
		n.Status.Conditions = conds
		return n
	}
	assigned := metav1.Condition{Type: v1alpha1.ConditionGatewayReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonChassisAssigned}
	noTrunk := metav1.Condition{Type: v1alpha1.ConditionGatewayReady, Status: metav1.ConditionFalse, Reason: "NoTrunkNodes", Message: "no trunk"}
	cases := map[string]struct {
		reason   string
		networks []v1alpha1.ProxmoxNetwork
		want     sim.Invariant
	}{
		"Assigned": {
			reason:   "True/ChassisAssigned holds",
			networks: []v1alpha1.ProxmoxNetwork{net("a", false, assigned)},
			want:     sim.Invariant{Name: CheckGatewayReady, Holds: true},
		},
		"NoTrunk": {
			reason:   "any other status or reason fails, with the message",
			networks: []v1alpha1.ProxmoxNetwork{net("a", false, noTrunk)},
			want:     sim.Invariant{Name: CheckGatewayReady, Detail: "t/a is False/NoTrunkNodes: no trunk"},
		},
		"Missing": {
			reason:   "a live network without the condition fails",
			networks: []v1alpha1.ProxmoxNetwork{net("a", false)},
			want:     sim.Invariant{Name: CheckGatewayReady, Detail: "t/a has no GatewayReady condition"},
		},
		"Deleting": {
			reason:   "a deleting network is not judged",
			networks: []v1alpha1.ProxmoxNetwork{net("a", true, noTrunk)},
			want:     sim.Invariant{Name: CheckGatewayReady, Holds: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := gatewayWorld{networks: tc.networks}.ready()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestFailoverCheck judges how groups changed when a chassis left.
func TestFailoverCheck(t *testing.T) {
	ch := func(names ...string) []ovngatewaytest.Chassis {
		out := make([]ovngatewaytest.Chassis, len(names))
		for i, n := range names {
			out[i] = ovngatewaytest.Chassis{Name: n, Priority: 100 - 10*i}
		}
		return out
	}
	state := func(groups map[string][]ovngatewaytest.Chassis) ovngatewaytest.State {
		st := ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{}}
		for name, cs := range groups {
			st.Groups[name] = ovngatewaytest.Group{Chassis: cs}
		}
		return st
	}
	before := state(map[string][]ovngatewaytest.Chassis{"g1": ch("a", "b", "c"), "g2": ch("b", "a", "c")})
	cases := map[string]struct {
		reason string
		after  ovngatewaytest.State
		holds  bool
	}{
		"OnlyItsGroupsMove": {
			reason: "a leaves; the others keep their order",
			after:  state(map[string][]ovngatewaytest.Chassis{"g1": ch("b", "c"), "g2": ch("b", "c")}),
			holds:  true,
		},
		"Reordered": {
			reason: "a group whose remaining chassis changed order moved more than the leaving node",
			after:  state(map[string][]ovngatewaytest.Chassis{"g1": ch("b", "c"), "g2": ch("c", "b")}),
		},
		"StillThere": {
			reason: "the leaving chassis must be gone",
			after:  state(map[string][]ovngatewaytest.Chassis{"g1": ch("a", "b", "c"), "g2": ch("b", "c")}),
		},
		"GroupGone": {
			reason: "a group must not vanish",
			after:  state(map[string][]ovngatewaytest.Chassis{"g1": ch("b", "c")}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := failover(before, tc.after, "a")
			if got.Holds != tc.holds || got.Name != CheckGatewayFailover {
				t.Errorf("%s: %+v, want holds=%v", tc.reason, got, tc.holds)
			}
		})
	}
}

// mtuPort is the router port of network ns/name at the end of the demo: on
// its own group, with the gateway_mtu the controller set and marked.
func mtuPort(network string) ovngatewaytest.Port {
	name := strings.ReplaceAll(network, "/", "-")
	return ovngatewaytest.Port{
		Group:       "px-vpc-" + name,
		Options:     map[string]string{"gateway_mtu": "1400"},
		ExternalIDs: map[string]string{"proxmox-network.gateway_mtu": network},
	}
}
