package kubeovn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestKubeOVNWithOurController runs our controller (the process of
// proxmox-network-controller, in the test) next to kube-ovn-controller,
// with everything vpcrender makes applied at once, as the vpc chart does:
// our controller allocates a Vlan for each ProxmoxNetwork, Kube-OVN makes
// the switches and router ports, and our controller gives each port its
// group and reports GatewayReady; Kube-OVN restarted once more changes
// nothing.
//
// Kube-OVN v1.14.10 handles a Subnet whose Vlan does not exist yet by
// failing it (ValidateSubnetVlanFailed) and does not look at it again when
// the Vlan appears (v1.15 re-queues a Vlan's subnets when it is created):
// the Subnet waits for a change or a restart of kube-ovn-controller. The
// test restarts it once the Vlans exist, and logs whether the subnets were
// waiting; docs/kube-ovn.md has the details.
func TestKubeOVNWithOurController(t *testing.T) {
	cl := startClusterOn(t, controllertest.StartAPIServer)
	cl.create(sim.Namespace("cozy-proxmox-network", nil))
	cl.create(sim.Zone("default", "vmbr1", providerNetwork, "101-199"))
	cl.startOurController()
	subnets := append(cl.apply(seedSpec, 0), cl.apply(twoSubnetSpec, 0)...)
	cl.eventually(time.Minute, "our controller's Vlans", func() (bool, string) {
		for _, s := range subnets {
			var v kubeovnv1.Vlan
			if err := cl.c.Get(cl.ctx, ctrlclient.ObjectKey{Name: s.Spec.Vlan}, &v); err != nil {
				return false, err.Error()
			}
		}
		return true, ""
	})
	cl.settle()
	for _, s := range subnets {
		var cur kubeovnv1.Subnet
		if err := cl.c.Get(cl.ctx, ctrlclient.ObjectKey{Name: s.Name}, &cur); err != nil {
			t.Fatal(err)
		}
		_, made := cl.routerPort(ovngateway.RouterPortName(s.Spec.Vpc, s.Name))
		t.Logf("before the restart, with its Vlan: subnet %s has a router port: %v; conditions %v", s.Name, made, subnetConditions(&cur))
	}
	if err := cl.k.RestartController(); err != nil {
		t.Fatal(err)
	}
	for _, s := range subnets {
		cl.checkKubeOVNMade(s)
	}
	cl.eventually(2*time.Minute, "our controller's groups", cl.networksReady(subnets))
	st := ovngatewaytest.ReadRows(t, cl.nb).State()
	for _, s := range subnets {
		cl.checkGroup(st, s)
	}
	if err := cl.k.RestartController(); err != nil {
		t.Fatal(err)
	}
	cl.settle()
	if ok, msg := cl.networksReady(subnets)(); !ok {
		t.Errorf("after Kube-OVN's second restart: %s", msg)
	}
	if diff := cmp.Diff(st, ovngatewaytest.ReadRows(t, cl.nb).State()); diff != "" {
		t.Errorf("Kube-OVN's second restart changed the gateway rows (-before +after):\n%s", diff)
	}
}

func subnetConditions(s *kubeovnv1.Subnet) []string {
	var out []string
	for _, c := range s.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
	}
	return out
}

// startOurController runs our controller on the test API server and the
// NB, without leader election, metrics, probes or webhook.
func (cl *cluster) startOurController() {
	cl.t.Helper()
	o := controller.DefaultOptions()
	o.OVNNBAddress, o.OVNTLSSecret = cl.k.NB.Addr, ""
	o.LeaderElect, o.MetricsBindAddress, o.ProbeBindAddress, o.WebhookPort = false, "0", "0", 0
	if err := o.Validate(); err != nil {
		cl.t.Fatal(err)
	}
	p, err := controller.New(cl.cfg, o, controller.Deps{Registry: prometheus.NewRegistry(), Identity: "test"})
	if err != nil {
		cl.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	cl.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			cl.t.Errorf("our controller: %v", err)
		}
	})
}

// networksReady says whether every subnet's ProxmoxNetwork reports
// GatewayReady with our group on Kube-OVN's router port.
func (cl *cluster) networksReady(subnets []*kubeovnv1.Subnet) func() (bool, string) {
	return func() (bool, string) {
		st := ovngatewaytest.ReadRows(cl.t, cl.nb).State()
		for _, s := range subnets {
			var n v1alpha1.ProxmoxNetwork
			if err := cl.c.Get(cl.ctx, keyOf(s.Labels["cozystack.io/tenantName"], s.Name), &n); err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionGatewayReady)
			if c == nil || c.Status != metav1.ConditionTrue {
				return false, fmt.Sprintf("%s: GatewayReady %+v; conditions %+v", n.Name, c, n.Status.Conditions)
			}
			port := ovngateway.RouterPortName(s.Spec.Vpc, s.Name)
			if g := st.Ports[port].Group; g != ovngateway.GroupName(port) {
				return false, fmt.Sprintf("%s uses group %q", port, g)
			}
		}
		return true, ""
	}
}

func keyOf(namespace, name string) ctrlclient.ObjectKey {
	return ctrlclient.ObjectKey{Namespace: namespace, Name: name}
}
