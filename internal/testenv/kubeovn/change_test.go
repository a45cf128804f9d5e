package kubeovn_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/kubeovn"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// TestKubeOVNChangesKeepOurGroup changes what Kube-OVN reconciles while our
// group is on its router port: the subnet's excluded addresses and its
// gateway, the Vpc (a static route), a node added and a node removed. After
// each change Kube-OVN has handled, the port must still point at our group
// (the monitor sees no change to the pointer), and our next pass writes
// nothing, or, when the trunk nodes changed, only the group's members.
func TestKubeOVNChangesKeepOurGroup(t *testing.T) {
	cl := startCluster(t)
	s := cl.apply(seedSpec, 101)[0]
	cl.checkKubeOVNMade(s)
	cl.assign(s)
	port := cl.gateway(s).RouterPort
	w := watchPorts(cl.nb, port)

	cl.step(w, port, 0, "exclude IPs and gateway updated", func() {
		cl.updateSubnet(s.Name, func(sub *kubeovnv1.Subnet) {
			sub.Spec.ExcludeIps = []string{"10.208.64.100..10.208.64.150"}
			sub.Spec.Gateway = "10.208.64.254"
		})
		cl.eventually(time.Minute, "Kube-OVN moving the router port to the new gateway", func() (bool, string) {
			lrp, _ := cl.routerPort(port)
			return slices.Equal(lrp.Networks, []string{"10.208.64.254/24"}), fmt.Sprintf("networks %v", lrp.Networks)
		})
	}, "networks [10.208.64.1/24]->[10.208.64.254/24]")

	cl.step(w, port, 0, "Vpc updated", func() {
		cl.updateVpc(s.Spec.Vpc)
		cl.eventually(time.Minute, "Kube-OVN adding the static route", func() (bool, string) {
			for _, r := range ovngatewaytest.Select[nbmodel.LogicalRouterStaticRoute](cl.t, cl.nb) {
				if r.IPPrefix == "10.208.128.0/24" && r.Nexthop == "10.208.64.10" {
					return true, ""
				}
			}
			return false, "no static route to 10.208.128.0/24"
		})
	})

	node4 := kubeovn.Node{Name: "node-4", IP: "192.0.2.14", Chassis: "chassis-node-4", ProviderNetworks: []string{providerNetwork}}
	cl.step(w, port, 1, "node added", func() {
		if err := cl.k.AddNode(cl.ctx, cl.c, node4); err != nil {
			t.Fatal(err)
		}
		cl.waitJoinPort(node4.Name, true)
	})
	if got := len(ovngatewaytest.ReadRows(t, cl.nb).State().Groups[ovngateway.GroupName(port)].Chassis); got != 4 {
		t.Errorf("after a node joined the group holds %d chassis, want 4", got)
	}

	cl.step(w, port, 1, "node removed", func() {
		if err := cl.k.RemoveNode(cl.ctx, cl.c, nodes[1]); err != nil {
			t.Fatal(err)
		}
		cl.waitJoinPort(nodes[1].Name, false)
	})
	st := ovngatewaytest.ReadRows(t, cl.nb).State()
	if st.Ports[port].Group != ovngateway.GroupName(port) || len(st.Groups[ovngateway.GroupName(port)].Chassis) != 3 {
		t.Errorf("after a node left: port %+v, group %+v", st.Ports[port], st.Groups[ovngateway.GroupName(port)])
	}
}

// step runs change, waits for Kube-OVN to settle, checks that the port
// and groups changed only as allowed (Kube-OVN's own column changes), then
// runs our pass, which must write exactly writes transactions.
func (cl *cluster) step(w *portWatch, port string, writes uint64, name string, change func(), allowed ...string) {
	cl.t.Helper()
	w.drain() // what our previous pass wrote
	change()
	cl.settle()
	for _, e := range w.quiet() {
		if !slices.ContainsFunc(allowed, func(a string) bool { return strings.Contains(e, a) }) {
			cl.t.Errorf("%s: Kube-OVN changed a gateway row: %s", name, e)
		}
	}
	if g := ovngatewaytest.ReadRows(cl.t, cl.nb).State().Ports[port].Group; g != ovngateway.GroupName(port) {
		cl.t.Errorf("%s: the port uses group %q", name, g)
	}
	var s kubeovnv1.Subnet
	if err := cl.c.Get(cl.ctx, ctrlclient.ObjectKey{Name: strings.TrimPrefix(port, vpcID(port)+"-")}, &s); err != nil {
		cl.t.Fatal(err)
	}
	before := cl.gw.Transactions()
	if err := cl.gw.Sync(cl.ctx); err != nil {
		cl.t.Fatal(err)
	}
	o, err := cl.gw.Reconcile(cl.ctx, cl.gateway(&s))
	if err != nil || o.Reason != ovngateway.ReasonChassisAssigned {
		cl.t.Fatalf("%s: our pass: %+v, %v", name, o, err)
	}
	if n := cl.gw.Transactions() - before; n != writes {
		cl.t.Errorf("%s: our pass wrote %d transactions, want %d", name, n, writes)
	}
}

// vpcID is the Vpc part of a router port name of a rendered VPC
// ("vpc-" and six hex characters).
func vpcID(port string) string { return port[:len("vpc-a40741")] }

func (cl *cluster) updateSubnet(name string, edit func(*kubeovnv1.Subnet)) {
	cl.t.Helper()
	var s kubeovnv1.Subnet
	if err := cl.c.Get(cl.ctx, ctrlclient.ObjectKey{Name: name}, &s); err != nil {
		cl.t.Fatal(err)
	}
	edit(&s)
	if err := cl.c.Update(cl.ctx, &s); err != nil {
		cl.t.Fatalf("cannot update Subnet %s: %v", name, err)
	}
}

// updateVpc adds a static route to the Vpc, as vpcrender renders one, with
// a next hop in the seed subnet.
func (cl *cluster) updateVpc(name string) {
	cl.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kubeovnv1.GroupVersion.WithKind("Vpc"))
	if err := cl.c.Get(cl.ctx, ctrlclient.ObjectKey{Name: name}, u); err != nil {
		cl.t.Fatal(err)
	}
	routes := []any{map[string]any{"cidr": "10.208.128.0/24", "nextHopIP": "10.208.64.10"}}
	if err := unstructured.SetNestedSlice(u.Object, routes, "spec", "staticRoutes"); err != nil {
		cl.t.Fatal(err)
	}
	if err := cl.c.Update(cl.ctx, u); err != nil {
		cl.t.Fatalf("cannot update Vpc %s: %v", name, err)
	}
}

// waitJoinPort waits until the node's port on the join switch exists (or
// is gone).
func (cl *cluster) waitJoinPort(node string, exists bool) {
	cl.t.Helper()
	cl.eventually(time.Minute, fmt.Sprintf("node %s's join port existing=%v", node, exists), func() (bool, string) {
		_, ok := cl.switchPort("node-" + node)
		return ok == exists, fmt.Sprintf("exists=%v", ok)
	})
}
