package ovngateway_test

import (
	"context"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// mtuCase is a rule case whose gateway asks for gateway_mtu mtu.
type mtuCase struct {
	ruleCase
	mtu int
}

// mtuPort is the router port row a gateway of network id with gateway_mtu
// mtu leaves, with the extra keys kept.
func mtuPort(id, mtu string, opts, ids map[string]string) ovngatewaytest.Port {
	p := ovngatewaytest.Port{Group: testGroup, Options: map[string]string{}, ExternalIDs: map[string]string{}}
	for k, v := range opts {
		p.Options[k] = v
	}
	for k, v := range ids {
		p.ExternalIDs[k] = v
	}
	if mtu != "" {
		p.Options[ovngateway.GatewayMTUOption], p.ExternalIDs[ovngateway.GatewayMTUOwnerKey] = mtu, id
	}
	if len(p.Options) == 0 {
		p.Options = nil
	}
	if len(p.ExternalIDs) == 0 {
		p.ExternalIDs = nil
	}
	return p
}

// TestReconcileGatewayMTU runs the gateway_mtu rules on both NBs: the
// option is set, changed and removed only under this network's mark, other
// keys are kept, and a value someone else set is refused by name with
// nothing written.
func TestReconcileGatewayMTU(t *testing.T) {
	onEachBackend(t, func(t *testing.T, nb nb) {
		for name, tc := range mtuCases() {
			t.Run(name, func(t *testing.T) {
				ovngatewaytest.Reset(t, nb.admin)
				gw := gateway(t, "tenant-a", "net1", "vpc1", "sub1", tc.nodes...)
				gw.GatewayMTU = tc.mtu
				tc.seed(t, nb.admin, gw)
				before := ovngatewaytest.Dump(t, nb.admin)
				c := dial(t, nb.endpoint)
				got := reconcile(t, c, gw)
				checkRule(t, tc.reason, tc.want, gw, got, before, nb, c)
				if tc.want.reason == ovngateway.ReasonChassisAssigned && got.GatewayMTU != tc.mtu {
					t.Errorf("%s\noutcome gateway MTU %d, want %d", tc.reason, got.GatewayMTU, tc.mtu)
				}
			})
		}
	})
}

func mtuCases() map[string]mtuCase {
	kubeOVN := map[string]string{"kube-ovn": "kept"}
	portWith := func(opts, ids map[string]string) func(t *testing.T, c client.Client, gw ovngateway.Gateway) {
		return func(t *testing.T, c client.Client, _ ovngateway.Gateway) {
			ovngatewaytest.AddRouterPort(t, c, "vpc1", testPort)
			ovngatewaytest.SetPortMaps(t, c, testPort, opts, ids)
		}
	}
	assigned := func(mtu string, opts, ids map[string]string) ruleWant {
		return ruleWant{reason: ovngateway.ReasonChassisAssigned, changed: true, state: func(gw ovngateway.Gateway) ovngatewaytest.State {
			return gatewayState(gw, mtuPort(gw.ID(), mtu, opts, ids))
		}}
	}
	mark := func(id string) map[string]string { return map[string]string{ovngateway.GatewayMTUOwnerKey: id} }
	return map[string]mtuCase{
		"Set": {mtu: 1400, ruleCase: ruleCase{
			reason: "a port put into the group gets gateway_mtu and the mark, in the same transaction",
			nodes:  threeNodes, seed: portWith(nil, nil), want: assigned("1400", nil, nil)}},
		"SetKeepsOtherKeys": {mtu: 1400, ruleCase: ruleCase{
			reason: "the port's other options and external_ids are kept",
			nodes:  threeNodes, seed: portWith(kubeOVN, kubeOVN), want: assigned("1400", kubeOVN, kubeOVN)}},
		"ChangeOwn": {mtu: 1400, ruleCase: ruleCase{
			reason: "a value this network set is changed to the wanted one",
			nodes:  threeNodes, seed: portWith(map[string]string{ovngateway.GatewayMTUOption: "9000"}, mark("tenant-a/net1")), want: assigned("1400", nil, nil)}},
		"RemoveOwn": {mtu: 0, ruleCase: ruleCase{
			reason: "a gateway without an MTU removes the value its network set, and the mark",
			nodes:  threeNodes, seed: portWith(map[string]string{ovngateway.GatewayMTUOption: "1400", "kube-ovn": "kept"}, mark("tenant-a/net1")),
			want: assigned("", kubeOVN, nil)}},
		"ZeroLeavesForeign": {mtu: 0, ruleCase: ruleCase{
			reason: "a gateway without an MTU leaves a value someone else set and assigns the group",
			nodes:  threeNodes, seed: portWith(map[string]string{ovngateway.GatewayMTUOption: "9000"}, nil),
			want: assigned("", map[string]string{ovngateway.GatewayMTUOption: "9000"}, nil)}},
		"ForeignValue": {mtu: 1400, ruleCase: ruleCase{
			reason: "a gateway_mtu without the mark is someone else's: refused by name, nothing written",
			nodes:  threeNodes, seed: portWith(map[string]string{ovngateway.GatewayMTUOption: "9000"}, nil),
			want: ruleWant{reason: ovngateway.ReasonForeignGatewayMTU,
				message: `router port "vpc1-sub1" has options:gateway_mtu=9000 set by someone else; the controller leaves it alone`}}},
		"ForeignNetwork": {mtu: 1400, ruleCase: ruleCase{
			reason: "a gateway_mtu marked for another network is refused by name, nothing written",
			nodes:  threeNodes, seed: portWith(map[string]string{ovngateway.GatewayMTUOption: "1400"}, mark("tenant-b/net9")),
			want: ruleWant{reason: ovngateway.ReasonForeignGatewayMTU,
				message: `router port "vpc1-sub1" has options:gateway_mtu set for network "tenant-b/net9"; the controller leaves it alone`}}},
	}
}

// TestReleaseGatewayMTU: Release removes the gateway_mtu its network set
// together with the group, keeps the port's other keys, and leaves a
// value without its mark alone.
func TestReleaseGatewayMTU(t *testing.T) {
	onEachBackend(t, func(t *testing.T, nb nb) {
		ovngatewaytest.Reset(t, nb.admin)
		ovngatewaytest.AddRouterPorts(t, nb.admin, "vpc1", testPort, "vpc1-sub2")
		ovngatewaytest.SetPortMaps(t, nb.admin, testPort, map[string]string{"kube-ovn": "kept"}, nil)
		ovngatewaytest.SetPortMaps(t, nb.admin, "vpc1-sub2", map[string]string{ovngateway.GatewayMTUOption: "9000"}, nil)
		c := dial(t, nb.endpoint)
		mine := gateway(t, "tenant-a", "net1", "vpc1", "sub1", threeNodes...)
		mine.GatewayMTU = 1400
		reconcile(t, c, mine)
		theirs := gateway(t, "tenant-a", "net2", "vpc1", "sub2", threeNodes...)
		if o := reconcile(t, c, theirs); o.Reason != ovngateway.ReasonChassisAssigned {
			t.Fatalf("a gateway without an MTU beside a foreign value: %+v", o)
		}
		for _, n := range []ovngateway.Network{mine.Network, theirs.Network} {
			if _, err := c.Release(context.Background(), n); err != nil {
				t.Fatalf("Release(%s): %v", n.ID(), err)
			}
		}
		want := ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{}, Ports: map[string]ovngatewaytest.Port{
			testPort:    {Options: map[string]string{"kube-ovn": "kept"}},
			"vpc1-sub2": {Options: map[string]string{ovngateway.GatewayMTUOption: "9000"}},
		}}
		wantRows(t, nb.admin, want, "rows after Release")
	})
}
