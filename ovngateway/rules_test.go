package ovngateway_test

import (
	"testing"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

const (
	testPort  = "vpc1-sub1"
	testGroup = "px-vpc1-sub1"
)

var threeNodes = []string{"node-1", "node-2", "node-3"}

func owned(network string) map[string]string {
	return map[string]string{ovngateway.OwnerKey: ovngateway.OwnerValue, ovngateway.NetworkKey: network}
}

func members(gw ovngateway.Gateway) []ovngatewaytest.Chassis {
	var out []ovngatewaytest.Chassis
	for _, m := range gw.Members {
		out = append(out, ovngatewaytest.Chassis{Name: m.Chassis, Priority: m.Priority})
	}
	return out
}

type ruleWant struct {
	reason  ovngateway.Reason
	message string // checked when not empty
	changed bool
	// state is the rows after the pass; nil means "exactly as seeded".
	state func(gw ovngateway.Gateway) ovngatewaytest.State
}

type ruleCase struct {
	reason string
	nodes  []string
	seed   func(t *testing.T, c client.Client, gw ovngateway.Gateway)
	want   ruleWant
}

// TestReconcileRules runs every ownership and reconcile rule on both NBs.
func TestReconcileRules(t *testing.T) {
	onEachBackend(t, func(t *testing.T, nb nb) {
		for name, tc := range ruleCases() {
			t.Run(name, func(t *testing.T) {
				ovngatewaytest.Reset(t, nb.admin)
				gw := gateway(t, "tenant-a", "net1", "vpc1", "sub1", tc.nodes...)
				tc.seed(t, nb.admin, gw)
				before := ovngatewaytest.Dump(t, nb.admin)
				c := dial(t, nb.endpoint)
				got := reconcile(t, c, gw)
				checkRule(t, tc.reason, tc.want, gw, got, before, nb, c)
			})
		}
	})
}

func ruleCases() map[string]ruleCase {
	return map[string]ruleCase{
		"Create": {
			reason: "a port without a group gets a new owned group with every chassis, and points at it",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
			},
			want: ruleWant{reason: ovngateway.ReasonChassisAssigned, changed: true, state: func(gw ovngateway.Gateway) ovngatewaytest.State {
				return ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{testGroup: wantGroup(gw, nil)}, Ports: map[string]ovngatewaytest.Port{testPort: {Group: testGroup}}}
			}},
		},
		"AdoptUnowned": {
			reason: "an untagged group with the network's name is adopted: tagged, its members fixed, other tags kept",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.AddGroup(t, c, testGroup, map[string]string{"note": "kept"}, ovngatewaytest.Chassis{Name: "ch-node-1", Priority: 5}, ovngatewaytest.Chassis{Name: "ch-old", Priority: 7})
			},
			want: ruleWant{reason: ovngateway.ReasonChassisAssigned, changed: true, state: func(gw ovngateway.Gateway) ovngatewaytest.State {
				return ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{testGroup: wantGroup(gw, map[string]string{"note": "kept"})}, Ports: map[string]ovngatewaytest.Port{testPort: {Group: testGroup}}}
			}},
		},
		"AdoptOwnedWithoutNetwork": {
			reason: "a group with our owner tag but no network tag is ours to complete",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.AddGroup(t, c, testGroup, map[string]string{ovngateway.OwnerKey: ovngateway.OwnerValue})
			},
			want: ruleWant{reason: ovngateway.ReasonChassisAssigned, changed: true, state: func(gw ovngateway.Gateway) ovngatewaytest.State {
				return ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{testGroup: wantGroup(gw, nil)}, Ports: map[string]ovngatewaytest.Port{testPort: {Group: testGroup}}}
			}},
		},
		"AdoptGroupThePortUses": {
			reason: "an untagged group the port already uses is adopted and the pointer kept",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.SetPortGroup(t, c, testPort, ovngatewaytest.AddGroup(t, c, testGroup, nil))
			},
			want: ruleWant{reason: ovngateway.ReasonChassisAssigned, changed: true, state: func(gw ovngateway.Gateway) ovngatewaytest.State {
				return ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{testGroup: wantGroup(gw, nil)}, Ports: map[string]ovngatewaytest.Port{testPort: {Group: testGroup}}}
			}},
		},
		"ForeignOwner": {
			reason: "a group of another owner is left alone",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.AddGroup(t, c, testGroup, map[string]string{ovngateway.OwnerKey: "kube-ovn"}, ovngatewaytest.Chassis{Name: "ch-x", Priority: 1})
			},
			want: ruleWant{reason: ovngateway.ReasonForeignGroup, message: `OVN HA_Chassis_Group "px-vpc1-sub1" belongs to "kube-ovn"`},
		},
		"ForeignNetwork": {
			reason: "our owner but another network is left alone",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.AddGroup(t, c, testGroup, owned("tenant-b/net9"), ovngatewaytest.Chassis{Name: "ch-x", Priority: 1})
			},
			want: ruleWant{reason: ovngateway.ReasonForeignGroup, message: `OVN HA_Chassis_Group "px-vpc1-sub1" belongs to network "tenant-b/net9"`},
		},
		"PortHasGatewayChassis": {
			reason: "a port made a gateway port the legacy way is left alone",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.AddGatewayChassis(t, c, testPort, "ch-x", 10)
			},
			want: ruleWant{reason: ovngateway.ReasonForeignGroup, message: `router port "vpc1-sub1" has 1 gateway_chassis; the controller leaves it alone`},
		},
		"PortUsesAnotherGroup": {
			reason: "a port that already uses another group is left alone",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.SetPortGroup(t, c, testPort, ovngatewaytest.AddGroup(t, c, "kube-ovn-gw", nil, ovngatewaytest.Chassis{Name: "ch-x", Priority: 1}))
			},
			want: ruleWant{reason: ovngateway.ReasonForeignGroup, message: `router port "vpc1-sub1" already uses HA_Chassis_Group "kube-ovn-gw"; the controller leaves it alone`},
		},
		"PortUsesAnotherGroupBesideOurs": {
			reason: "our own group is not touched either while the port uses another one",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.AddGroup(t, c, testGroup, owned("tenant-a/net1"), ovngatewaytest.Chassis{Name: "ch-old", Priority: 1})
				ovngatewaytest.SetPortGroup(t, c, testPort, ovngatewaytest.AddGroup(t, c, "kube-ovn-gw", nil))
			},
			want: ruleWant{reason: ovngateway.ReasonForeignGroup, message: `router port "vpc1-sub1" already uses HA_Chassis_Group "kube-ovn-gw"; the controller leaves it alone`},
		},
		"RouterPortMissing": {
			reason: "without a port nothing is created",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", "vpc1-other")
			},
			want: ruleWant{reason: ovngateway.ReasonRouterPortMissing, message: `OVN has no logical router port "vpc1-sub1" yet`},
		},
		"RouterPortMissingKeepsGroup": {
			reason: "an owned group survives while its port is gone",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, gw ovngateway.Gateway) {
				ovngatewaytest.AddGroup(t, c, testGroup, owned(gw.ID()), ovngatewaytest.Chassis{Name: "ch-old", Priority: 1})
			},
			want: ruleWant{reason: ovngateway.ReasonRouterPortMissing, message: `OVN has no logical router port "vpc1-sub1" yet`},
		},
		"NoTrunkNodes": {
			reason: "without chassis nothing is written",
			seed: func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
			},
			want: ruleWant{reason: ovngateway.ReasonNoTrunkNodes,
				message: `no Node is ready on provider network "pxtenant" with an OVN chassis; HA_Chassis_Group "px-vpc1-sub1" is left as it is`},
		},
		"NoTrunkNodesKeepsChassis": {
			reason: "an existing group keeps its chassis when no trunk node is ready",
			seed: func(t *testing.T, c client.Client, gw ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.SetPortGroup(t, c, testPort, ovngatewaytest.AddGroup(t, c, testGroup, owned(gw.ID()), ovngatewaytest.Chassis{Name: "ch-node-9", Priority: 100}))
			},
			want: ruleWant{reason: ovngateway.ReasonNoTrunkNodes},
		},
		"Reprioritise": {
			reason: "wrong priorities are updated, duplicates and unwanted chassis removed, missing ones inserted, in one transaction",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, gw ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.SetPortGroup(t, c, testPort, ovngatewaytest.AddGroup(t, c, testGroup, owned(gw.ID()),
					ovngatewaytest.Chassis{Name: gw.Members[0].Chassis, Priority: 1},
					ovngatewaytest.Chassis{Name: gw.Members[0].Chassis, Priority: 2},
					ovngatewaytest.Chassis{Name: gw.Members[1].Chassis, Priority: gw.Members[1].Priority},
					ovngatewaytest.Chassis{Name: gw.Members[1].Chassis, Priority: 3},
					ovngatewaytest.Chassis{Name: "ch-gone", Priority: 50}))
			},
			want: ruleWant{reason: ovngateway.ReasonChassisAssigned, changed: true, state: func(gw ovngateway.Gateway) ovngatewaytest.State {
				return ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{testGroup: wantGroup(gw, nil)}, Ports: map[string]ovngatewaytest.Port{testPort: {Group: testGroup}}}
			}},
		},
		"PointerCleared": {
			reason: "a port whose pointer was cleared gets it back and nothing else is written",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, gw ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.AddGroup(t, c, testGroup, owned(gw.ID()), members(gw)...)
			},
			want: ruleWant{reason: ovngateway.ReasonChassisAssigned, changed: true, state: func(gw ovngateway.Gateway) ovngatewaytest.State {
				return ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{testGroup: wantGroup(gw, nil)}, Ports: map[string]ovngatewaytest.Port{testPort: {Group: testGroup}}}
			}},
		},
		"Converged": {
			reason: "a network that is already right costs no transaction",
			nodes:  threeNodes,
			seed: func(t *testing.T, c client.Client, gw ovngateway.Gateway) {
				ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
				ovngatewaytest.SetPortGroup(t, c, testPort, ovngatewaytest.AddGroup(t, c, testGroup, owned(gw.ID()), members(gw)...))
			},
			want: ruleWant{reason: ovngateway.ReasonChassisAssigned},
		},
	}
}

func checkRule(t *testing.T, reason string, want ruleWant, gw ovngateway.Gateway, got ovngateway.Outcome, before ovngatewaytest.State, nb nb, c *ovngateway.Client) {
	t.Helper()
	if got.Reason != want.reason || (want.message != "" && got.Message != want.message) || got.Changed != want.changed {
		t.Errorf("%s\nReconcile: got %s %q changed=%v, want %s %q changed=%v", reason, got.Reason, got.Message, got.Changed, want.reason, want.message, want.changed)
	}
	wantTxns := uint64(0)
	if want.changed {
		wantTxns = 1
	}
	if n := c.Transactions(); n != wantTxns {
		t.Errorf("%s\nthe pass sent %d transactions, want %d", reason, n, wantTxns)
	}
	wantState := before
	if want.state != nil {
		wantState = want.state(gw)
	}
	wantRows(t, nb.admin, wantState, reason+"\nrows after the pass")
	again := reconcile(t, c, gw)
	if again.Changed || c.Transactions() != wantTxns || again.Reason != want.reason {
		t.Errorf("%s\na second pass must write nothing: %+v, transactions %d", reason, again, c.Transactions())
	}
	wantRows(t, nb.admin, wantState, reason+"\nrows after a second pass")
}
