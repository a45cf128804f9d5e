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
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/sim"
)

// Names of the cluster Setup builds.
const (
	Zone            = "zone-a"
	Bridge          = "vmbr1"
	ProviderNetwork = "pxtenant"
	VPC             = "vpc-a"
	Tenant          = "tenant-a"
)

// Node is a Node ready on ProviderNetwork with the OVN chassis "ch-<name>".
func Node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{ovngateway.ReadyLabel(ProviderNetwork): "true"},
		Annotations: map[string]string{ovngateway.ChassisAnnotation: "ch-" + name},
	}}
}

// Setup creates what a cluster holds before its first network: the
// namespaces cozy-proxmox-network (unless it exists), cozy-kubeovn and
// Tenant, the provider network (ready), the zone with VLANs 100-1099 and
// the given trunk nodes.
func Setup(t testing.TB, c client.Client, nodes ...string) {
	t.Helper()
	objs := []client.Object{
		sim.Namespace("cozy-proxmox-network", nil), sim.Namespace("cozy-kubeovn", nil), sim.Namespace(Tenant, nil),
		sim.Zone(Zone, Bridge, ProviderNetwork, "100-1099"),
	}
	for _, n := range nodes {
		objs = append(objs, Node(n))
	}
	for _, o := range objs {
		Create(t, c, o)
	}
	pn := sim.ProviderNetwork(ProviderNetwork, true)
	status := pn.Status
	Create(t, c, pn)
	pn.Status = status
	if err := c.Status().Update(context.Background(), pn); err != nil {
		t.Fatalf("cannot set the ProviderNetwork ready: %v", err)
	}
}

// Create creates o; an object that already exists is fine.
func Create(t testing.TB, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("cannot create %T %s: %v", o, client.ObjectKeyFromObject(o), err)
	}
}

// AddNetwork creates what the vpc chart writes for network i of Tenant:
// the Subnet "net-<i>" of VPC with 10.<i/256>.<i%256>.0/24, its pool and
// its ProxmoxNetwork.
func AddNetwork(t testing.TB, c client.Client, i int) string {
	t.Helper()
	name := NetworkName(i)
	objs, err := sim.Network(Tenant, name, Zone, VPC, fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		Create(t, c, o)
	}
	return name
}

// NetworkName is the name of network i.
func NetworkName(i int) string { return fmt.Sprintf("net-%d", i) }

// DeleteNetwork deletes network name as removing it from the vpc chart
// does: the ProxmoxNetwork, its pool and its Subnet.
func DeleteNetwork(t testing.TB, c client.Client, name string) {
	t.Helper()
	objs, err := sim.Network(Tenant, name, Zone, VPC, "10.0.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("cannot delete %T %s: %v", o, client.ObjectKeyFromObject(o), err)
		}
	}
}

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

// Ready reports whether the network is Ready, with its conditions as the
// message otherwise.
func Ready(ctx context.Context, c client.Client, name string) (bool, string) {
	n := &v1alpha1.ProxmoxNetwork{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Tenant, Name: name}, n); err != nil {
		return false, err.Error()
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1alpha1.ConditionReady && cond.Status == metav1.ConditionTrue {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%s: %+v", name, n.Status.Conditions)
}
