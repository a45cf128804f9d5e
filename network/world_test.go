package network_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

const provider = "pxtenant"

// tb is what the helpers need from *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// netID is a test network: namespace tenant-<i%3>, every object named s-<i>.
type netID int

func (n netID) ns() string   { return fmt.Sprintf("tenant-%d", int(n)%3) }
func (n netID) name() string { return fmt.Sprintf("s-%d", int(n)) }
func (n netID) key() client.ObjectKey {
	return client.ObjectKey{Namespace: n.ns(), Name: n.name()}
}
func (n netID) cidr() string { return fmt.Sprintf("10.%d.%d.0/24", 10+int(n)/250, int(n)%250) }

// baseWorld creates the provider network, zones and namespaces.
func baseWorld(t tb, c client.Client, zones map[string][]string) {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{sim.ProviderNetwork(provider, true)}
	names := make([]string, 0, len(zones))
	for z := range zones {
		names = append(names, z)
	}
	sort.Strings(names)
	for _, z := range names {
		objs = append(objs, sim.Zone(z, "vmbr1", provider, zones[z]...))
	}
	for i := range 3 {
		objs = append(objs, sim.Namespace(fmt.Sprintf("tenant-%d", i), nil))
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
}

// createNetwork writes what the vpc chart writes for n.
func createNetwork(t tb, c client.Client, n netID, zone string) {
	t.Helper()
	objs, err := sim.Network(n.ns(), n.name(), zone, "vpc-"+n.ns(), n.cidr())
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
}

// uninstall deletes n's network, subnet and pool, as helm uninstall does.
func uninstall(t tb, c client.Client, n netID) {
	t.Helper()
	ctx := context.Background()
	for _, o := range []client.Object{
		&v1alpha1.ProxmoxNetwork{}, &kubeovnv1.Subnet{}, &ipamv1alpha2.InClusterIPPool{},
	} {
		key := n.key()
		if _, ok := o.(*kubeovnv1.Subnet); ok {
			key.Namespace = ""
		}
		if err := c.Get(ctx, key, o); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			t.Fatalf("get %s: %v", key, err)
		}
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s: %v", key, err)
		}
	}
}

// snapshot is the world read straight from the store.
type snapshot struct {
	vlans    []kubeovnv1.Vlan
	claims   []v1alpha1.ProxmoxVLANClaim
	networks map[client.ObjectKey]v1alpha1.ProxmoxNetwork
	subnets  map[string]kubeovnv1.Subnet
	zones    []v1alpha1.ProxmoxNetworkZone
	addrs    []capiipam.IPAddress
}

func read(t tb, c client.Client) snapshot {
	t.Helper()
	ctx := context.Background()
	var s snapshot
	var vl kubeovnv1.VlanList
	var cl v1alpha1.ProxmoxVLANClaimList
	var nl v1alpha1.ProxmoxNetworkList
	var sl kubeovnv1.SubnetList
	var zl v1alpha1.ProxmoxNetworkZoneList
	var al capiipam.IPAddressList
	for _, l := range []client.ObjectList{&vl, &cl, &nl, &sl, &zl, &al} {
		if err := c.List(ctx, l); err != nil {
			t.Fatalf("list: %v", err)
		}
	}
	s.vlans, s.claims, s.zones, s.addrs = vl.Items, cl.Items, zl.Items, al.Items
	s.networks = map[client.ObjectKey]v1alpha1.ProxmoxNetwork{}
	for _, n := range nl.Items {
		s.networks[client.ObjectKeyFromObject(&n)] = n
	}
	s.subnets = map[string]kubeovnv1.Subnet{}
	for _, sub := range sl.Items {
		s.subnets[sub.Name] = sub
	}
	return s
}

// checkUniqueIDs: no two live Vlans of one provider network share an ID,
// and no two claims do (names guarantee the latter; the check proves it).
func checkUniqueIDs(t tb, s snapshot) {
	t.Helper()
	seen := map[string]string{}
	for _, v := range s.vlans {
		if v.Spec.ID == 0 {
			continue
		}
		k := v.Spec.Provider + "/" + strconv.Itoa(v.Spec.ID)
		if other, ok := seen[k]; ok {
			t.Fatalf("Vlans %q and %q share VLAN %s", other, v.Name, k)
		}
		seen[k] = v.Name
	}
}

// recount computes a zone's counts from the objects, the way the zone
// reconciler must report them.
func recount(t tb, s snapshot, z v1alpha1.ProxmoxNetworkZone) vlanalloc.Counts {
	t.Helper()
	zone, err := kubestore.ZoneFromAPI(&z)
	if err != nil {
		t.Fatalf("zone %s: %v", z.Name, err)
	}
	used := map[int]bool{}
	ours := map[int]bool{}
	holders := map[v1alpha1.NetworkReference]bool{}
	for _, v := range s.vlans {
		if v.Spec.Provider != z.Spec.ProviderNetwork || v.Spec.ID == 0 {
			continue
		}
		used[v.Spec.ID] = true
		ref := v1alpha1.NetworkReference{Namespace: v.Labels[v1alpha1.LabelNetworkNamespace], Name: v.Labels[v1alpha1.LabelNetworkName]}
		if v.Labels[v1alpha1.LabelZone] == z.Name && ref.Name != "" {
			ours[v.Spec.ID] = true
			holders[ref] = true
		}
	}
	for _, c := range s.claims {
		if c.Spec.ProviderNetwork != z.Spec.ProviderNetwork {
			continue
		}
		used[int(c.Spec.VLAN)] = true
		if c.Spec.Zone == z.Name {
			ours[int(c.Spec.VLAN)] = true
			holders[c.Spec.Network] = true
		}
	}
	for _, sa := range zone.StaticAssignments() {
		used[sa.VID] = true
	}
	free := 0
	alloc := zone.Allocatable()
	for _, vid := range alloc.IDs() {
		if !used[vid] {
			free++
		}
	}
	return vlanalloc.Counts{Total: alloc.Len(), Allocated: len(ours), Free: free, Networks: len(holders)}
}

// checkZoneCounts compares every zone's status with a recount; networks
// counts the ProxmoxNetworks bound to the zone.
func checkZoneCounts(t tb, s snapshot) {
	t.Helper()
	for _, z := range s.zones {
		want := recount(t, s, z)
		nets := 0
		for _, n := range s.networks {
			if n.Spec.Zone == z.Name {
				nets++
			}
		}
		got := z.Status
		if int(got.TotalVLANs) != want.Total || int(got.AllocatedVLANs) != want.Allocated || int(got.FreeVLANs) != want.Free || int(got.Networks) != nets {
			t.Fatalf("zone %s status total/allocated/free/networks = %d/%d/%d/%d, recount %d/%d/%d/%d",
				z.Name, got.TotalVLANs, got.AllocatedVLANs, got.FreeVLANs, got.Networks, want.Total, want.Allocated, want.Free, nets)
		}
	}
}

func hasFinalizer(o client.Object) bool {
	return controllerutil.ContainsFinalizer(o, v1alpha1.Finalizer)
}

func machine(n netID, name, version string, vlan int) *unstructured.Unstructured {
	return sim.Machine(n.ns(), name, version, "vmbr1", vlan, n.name())
}
