package kubeovn_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// seedSpec is the seed's Proxmox-backed subnet (vpcrender's
// testdata/facts-example.yaml without egress): tenant-test, VPC "net",
// subnet "private", which give vpc-a40741 and subnet-b10ab7f7.
const seedSpec = `
namespace: tenant-test
name: net
subnets:
  - name: private
    cidr: 10.208.64.0/24
    proxmox: {}
zones:
  - name: default
    providerNetwork: pxtenant
`

// twoSubnetSpec is a VPC with two Proxmox-backed subnets and a zone MTU.
const twoSubnetSpec = `
namespace: tenant-test
name: two
subnets:
  - name: workers
    cidr: 10.208.66.0/24
    proxmox: {vmRange: 10.208.66.100-10.208.66.199}
  - name: data
    cidr: 10.208.67.0/25
    proxmox: {}
zones:
  - name: default
    providerNetwork: pxtenant
    mtu: 8996
`

// TestKubeOVNReconcilesRenderedSubnets applies what vpcrender makes of the
// seed's subnet and of a VPC with two subnets, admitted by kube-ovn-webhook
// and reconciled by kube-ovn-controller v1.14.10 into the real northbound
// database, then gives Kube-OVN's router ports our HA_Chassis_Group and
// checks, row by row, what Kube-OVN made and what we added.
func TestKubeOVNReconcilesRenderedSubnets(t *testing.T) {
	cl := startCluster(t)
	subnets := append(cl.apply(seedSpec, 101), cl.apply(twoSubnetSpec, 102)...)
	if len(subnets) != 3 {
		t.Fatalf("want three Proxmox-backed subnets, rendered %d", len(subnets))
	}
	for _, s := range subnets {
		cl.checkKubeOVNMade(s)
	}
	cl.checkWebhookRefuses(subnets[0])
	for _, s := range subnets {
		cl.assign(s)
	}
	st := ovngatewaytest.ReadRows(t, cl.nb).State()
	for _, s := range subnets {
		cl.checkGroup(st, s)
	}
	// Every subnet of a VPC is active on the same node.
	two := []ovngatewaytest.Group{st.Groups[cl.gateway(subnets[1]).Group()], st.Groups[cl.gateway(subnets[2]).Group()]}
	if diff := cmp.Diff(two[0].Chassis, two[1].Chassis); diff != "" {
		t.Errorf("the two subnets of one VPC have different chassis orders (-workers +data):\n%s", diff)
	}
}

// checkKubeOVNMade waits for and checks what Kube-OVN makes of a VLAN
// subnet with logicalGateway: its VPC's router, the subnet's switch with a
// localnet port tagged with the Vlan's ID on the provider network, and
// the router port with the gateway address, patched to the switch.
func (cl *cluster) checkKubeOVNMade(s *kubeovnv1.Subnet) {
	cl.t.Helper()
	port := ovngateway.RouterPortName(s.Spec.Vpc, s.Name)
	cl.eventually(2*time.Minute, "Kube-OVN's router port "+port, func() (bool, string) {
		_, ok := cl.routerPort(port)
		return ok, "no Logical_Router_Port " + port
	})
	lrp, _ := cl.routerPort(port)
	prefix := strings.SplitN(s.Spec.CIDRBlock, "/", 2)[1]
	if want := []string{s.Spec.Gateway + "/" + prefix}; !slices.Equal(lrp.Networks, want) {
		cl.t.Errorf("%s: networks %v, want %v", port, lrp.Networks, want)
	}
	// A group on it can only be ours (our controller may be faster).
	if g := ovngatewaytest.ReadRows(cl.t, cl.nb).State().Ports[port].Group; (g != "" && g != ovngateway.GroupName(port)) || len(lrp.GatewayChassis) != 0 {
		cl.t.Errorf("%s: Kube-OVN made it with a gateway of its own: group %q, gateway_chassis %v", port, g, lrp.GatewayChassis)
	}
	lr, ok := cl.router(s.Spec.Vpc)
	if !ok || !slices.Contains(lr.Ports, lrp.UUID) {
		cl.t.Errorf("%s: not a port of Kube-OVN's router %s (found %v)", port, s.Spec.Vpc, ok)
	}
	ls, ok := cl.logicalSwitch(s.Name)
	if !ok {
		cl.t.Fatalf("no logical switch %s", s.Name)
	}
	patch, ok := cl.switchPort(s.Name + "-" + s.Spec.Vpc)
	if !ok || patch.Type != "router" || patch.Options["router-port"] != port || !slices.Contains(ls.Ports, patch.UUID) {
		cl.t.Errorf("%s: the switch's router port: %+v (found %v)", s.Name, patch, ok)
	}
	var vlan kubeovnv1.Vlan
	if err := cl.c.Get(cl.ctx, ctrlclient.ObjectKey{Name: s.Spec.Vlan}, &vlan); err != nil {
		cl.t.Fatal(err)
	}
	cl.eventually(time.Minute, "the localnet port of "+s.Name, func() (bool, string) {
		ln, ok := cl.switchPort("localnet." + s.Name)
		if !ok {
			return false, "no localnet port"
		}
		ok = ln.Type == "localnet" && ln.Options["network_name"] == providerNetwork && ln.Tag != nil && *ln.Tag == vlan.Spec.ID
		return ok, fmt.Sprintf("localnet port %+v, want network %s tag %d", ln, providerNetwork, vlan.Spec.ID)
	})
}

// checkWebhookRefuses shows the rendered objects went through Kube-OVN's
// webhook: a copy of s under another name, with s's CIDR, is refused by
// its CIDR conflict check.
func (cl *cluster) checkWebhookRefuses(s *kubeovnv1.Subnet) {
	cl.t.Helper()
	dup := s.DeepCopy()
	dup.ObjectMeta = *dup.ObjectMeta.DeepCopy()
	dup.Name, dup.ResourceVersion, dup.UID = s.Name+"-copy", "", ""
	err := cl.c.Create(cl.ctx, dup)
	if err == nil || !strings.Contains(err.Error(), "conflict") {
		cl.t.Errorf("a Subnet overlapping %s (%s): %v, want kube-ovn-webhook's refusal", s.Name, s.Spec.CIDRBlock, err)
	}
}

// assign runs our pass for s until it assigns the group, and checks that a
// second pass writes nothing.
func (cl *cluster) assign(s *kubeovnv1.Subnet) ovngateway.Outcome {
	cl.t.Helper()
	gw := cl.gateway(s)
	var o ovngateway.Outcome
	cl.eventually(30*time.Second, "our group on "+gw.RouterPort, func() (bool, string) {
		var err error
		if err = cl.gw.Sync(cl.ctx); err == nil {
			o, err = cl.gw.Reconcile(cl.ctx, gw)
		}
		return err == nil && o.Reason == ovngateway.ReasonChassisAssigned, fmt.Sprintf("%+v, %v", o, err)
	})
	before := cl.gw.Transactions()
	if o, err := cl.gw.Reconcile(cl.ctx, gw); err != nil || o.Reason != ovngateway.ReasonChassisAssigned {
		cl.t.Fatalf("second pass on %s: %+v, %v", gw.RouterPort, o, err)
	}
	if n := cl.gw.Transactions() - before; n != 0 {
		cl.t.Errorf("a second pass on %s wrote %d transactions, want 0", gw.RouterPort, n)
	}
	return o
}

// checkGroup checks that s's router port uses our group, which holds the
// three trunk nodes' chassis ranked for the subnet's VPC, with our tags.
func (cl *cluster) checkGroup(st ovngatewaytest.State, s *kubeovnv1.Subnet) {
	cl.t.Helper()
	gw := cl.gateway(s)
	if got := st.Ports[gw.RouterPort].Group; got != gw.Group() {
		cl.t.Errorf("%s uses group %q, want %q", gw.RouterPort, got, gw.Group())
	}
	var want []ovngatewaytest.Chassis
	for _, m := range gw.Members {
		want = append(want, ovngatewaytest.Chassis{Name: m.Chassis, Priority: m.Priority})
	}
	g := st.Groups[gw.Group()]
	if diff := cmp.Diff(want, g.Chassis); diff != "" || len(want) != len(nodes) {
		cl.t.Errorf("group %s members (-want +got):\n%s", gw.Group(), diff)
	}
	if g.ExternalIDs[ovngateway.OwnerKey] != ovngateway.OwnerValue || g.ExternalIDs[ovngateway.NetworkKey] != gw.ID() {
		cl.t.Errorf("group %s tags %v", gw.Group(), g.ExternalIDs)
	}
}
