package controllertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
)

// Names of the cluster Default describes.
const (
	Zone            = "zone-a"
	Bridge          = "vmbr1"
	ProviderNetwork = "pxtenant"
	VPC             = "vpc-a"
	Tenant          = "tenant-a"
)

// Cluster names one zone with its provider network, a VPC and a tenant
// namespace, so that tests sharing an API server keep apart.
type Cluster struct {
	Zone, Bridge, ProviderNetwork, VPC, Tenant string
	// Ranges are the zone's vlanRanges.
	Ranges []string
	// Net is the second octet of the networks' CIDRs (10.<Net>.<i>.0/24).
	Net int
}

// Default is the cluster of the package's constants, VLANs 100-1099.
var Default = Cluster{Zone: Zone, Bridge: Bridge, ProviderNetwork: ProviderNetwork, VPC: VPC, Tenant: Tenant, Ranges: []string{"100-1099"}, Net: 100}

// Node is a Node ready on the provider network with the OVN chassis
// "ch-<name>".
func (cl Cluster) Node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{kubegateway.ReadyLabel(cl.ProviderNetwork): "true"},
		Annotations: map[string]string{kubegateway.ChassisAnnotation: "ch-" + name},
	}}
}

// Setup creates what a cluster holds before its first network: the
// namespaces cozy-proxmox-network, cozy-kubeovn and the tenant's, the
// provider network (ready), the zone and the given trunk nodes. Objects
// that exist already are kept.
func (cl Cluster) Setup(t testing.TB, c client.Client, nodes ...string) {
	t.Helper()
	objs := []client.Object{
		sim.Namespace("cozy-proxmox-network", nil), sim.Namespace("cozy-kubeovn", nil), sim.Namespace(cl.Tenant, nil),
		sim.Zone(cl.Zone, cl.Bridge, cl.ProviderNetwork, cl.Ranges...),
	}
	for _, n := range nodes {
		objs = append(objs, cl.Node(n))
	}
	for _, o := range objs {
		Create(t, c, o)
	}
	pn := sim.ProviderNetwork(cl.ProviderNetwork, true)
	status := pn.Status
	Create(t, c, pn)
	pn.Status = status
	if err := c.Status().Update(context.Background(), pn); err != nil {
		t.Fatalf("cannot set the ProviderNetwork ready: %v", err)
	}
}

// Setup is Default.Setup.
func Setup(t testing.TB, c client.Client, nodes ...string) { Default.Setup(t, c, nodes...) }

// Create creates o; an object that already exists is fine.
func Create(t testing.TB, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("cannot create %T %s: %v", o, client.ObjectKeyFromObject(o), err)
	}
}

// AddNetwork creates what the vpc chart writes for network i of the
// tenant: the Subnet "<tenant>-net-<i>" of the VPC with
// 10.<Net+i/256>.<i%256>.0/24, its pool and its ProxmoxNetwork. It
// returns the name they share.
func (cl Cluster) AddNetwork(t testing.TB, c client.Client, i int) string {
	t.Helper()
	name := cl.NetworkName(i)
	objs, err := sim.Network(cl.Tenant, name, cl.Zone, cl.VPC, fmt.Sprintf("10.%d.%d.0/24", cl.Net+i/256, i%256))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		Create(t, c, o)
	}
	return name
}

// AddNetwork is Default.AddNetwork.
func AddNetwork(t testing.TB, c client.Client, i int) string { return Default.AddNetwork(t, c, i) }

// NetworkName is the name of network i: "net-<i>" in Default, else
// "<tenant>-net-<i>" (Subnets are cluster-scoped).
func (cl Cluster) NetworkName(i int) string {
	if cl.Tenant == Tenant {
		return fmt.Sprintf("net-%d", i)
	}
	return fmt.Sprintf("%s-net-%d", cl.Tenant, i)
}

// DeleteNetwork deletes network name as removing it from the vpc chart
// does: the ProxmoxNetwork, its pool and its Subnet.
func (cl Cluster) DeleteNetwork(t testing.TB, c client.Client, name string) {
	t.Helper()
	objs, err := sim.Network(cl.Tenant, name, cl.Zone, cl.VPC, "10.0.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("cannot delete %T %s: %v", o, client.ObjectKeyFromObject(o), err)
		}
	}
}

// DeleteNetwork is Default.DeleteNetwork.
func DeleteNetwork(t testing.TB, c client.Client, name string) { Default.DeleteNetwork(t, c, name) }

// Eventually calls cond every interval until it reports true, playing
// step (when not nil) before each call, and fails t with cond's last
// message after timeout.
func Eventually(t testing.TB, timeout time.Duration, step func() error, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var msg, stepErr string
	for {
		if step != nil {
			if err := step(); err != nil {
				stepErr = err.Error()
			} else {
				stepErr = ""
			}
		}
		ok, m := cond()
		if ok {
			return
		}
		msg = m
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %s: %s (last step error: %q)", timeout, msg, stepErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Ready reports whether network name of Default is Ready, with its
// conditions as the message otherwise.
func Ready(ctx context.Context, c client.Client, name string) (bool, string) {
	return Default.Ready(ctx, c, name)
}

// Ready reports whether the tenant's network name is Ready, with its
// conditions as the message otherwise.
func (cl Cluster) Ready(ctx context.Context, c client.Client, name string) (bool, string) {
	n := &v1alpha1.ProxmoxNetwork{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Tenant, Name: name}, n); err != nil {
		return false, err.Error()
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1alpha1.ConditionReady && cond.Status == metav1.ConditionTrue {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%s: %+v", name, n.Status.Conditions)
}
