package network_test

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// getNamed reads the cluster-scoped object name from c.
func getNamed[T any, PT interface {
	*T
	client.Object
}](t *testing.T, c client.Client, name string) PT {
	t.Helper()
	obj := PT(new(T))
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// subnetFinalizerCases runs the Subnet finalizer patch on store: it
// applies over a status Kube-OVN wrote after the copy was read, keeps the
// finalizers others hold, and is refused with a Conflict, changing
// nothing, when the finalizers changed since the copy was read.
func subnetFinalizerCases(t *testing.T, c client.Client) {
	ctx := context.Background()
	const theirs = "kubeovn.io/kube-ovn-controller"
	subnet := func(t *testing.T, name string, finalizers ...string) *kubeovnv1.Subnet {
		t.Helper()
		objs, err := sim.Network("fin", name, "z", "vpc", "10.9.0.0/24")
		if err != nil {
			t.Fatal(err)
		}
		s := objs[0].(*kubeovnv1.Subnet)
		s.Finalizers = finalizers
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	get := func(t *testing.T, name string) *kubeovnv1.Subnet { return getNamed[kubeovnv1.Subnet](t, c, name) }
	reportReady := func(t *testing.T, name string) {
		t.Helper()
		if err := c.Status().Patch(ctx, &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}}, subnetReady); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		have []string
	}{{"none", nil}, {"kube-ovn's", []string{theirs}}} {
		t.Run("over a newer status, "+tc.name, func(t *testing.T) {
			name := "fin-status-" + map[bool]string{true: "none", false: "kubeovn"}[tc.have == nil]
			stale := subnet(t, name, tc.have...)
			reportReady(t, name)
			if err := network.AddFinalizer(ctx, c, stale, v1alpha1.Finalizer); err != nil {
				t.Fatalf("the finalizer patch over a newer status: %v", err)
			}
			got := get(t, name)
			if want := append(slices.Clone(tc.have), v1alpha1.Finalizer); !slices.Equal(got.Finalizers, want) {
				t.Errorf("finalizers %q, want %q", got.Finalizers, want)
			}
			if len(got.Status.Conditions) == 0 {
				t.Errorf("the patch lost the status Kube-OVN wrote: %+v", got.Status)
			}
			if stale.ResourceVersion != got.ResourceVersion || !slices.Equal(stale.Finalizers, got.Finalizers) {
				t.Errorf("the patched copy is not what the server stored: resourceVersion %s, finalizers %q", stale.ResourceVersion, stale.Finalizers)
			}
		})
	}
	for _, tc := range []struct {
		name       string
		have, then []string
	}{
		{"added from none", nil, []string{theirs}},
		{"added to one", []string{theirs}, []string{theirs, "example.com/other"}},
		{"removed", []string{theirs}, nil},
	} {
		t.Run("finalizers "+tc.name+" meanwhile", func(t *testing.T) {
			name := "fin-race-" + map[string]string{"added from none": "a", "added to one": "b", "removed": "c"}[tc.name]
			stale := subnet(t, name, tc.have...)
			cur := get(t, name)
			cur.Finalizers = tc.then
			if err := c.Update(ctx, cur); err != nil {
				t.Fatal(err)
			}
			err := network.AddFinalizer(ctx, c, stale.DeepCopy(), v1alpha1.Finalizer)
			if !apierrors.IsConflict(err) {
				t.Fatalf("the patch over changed finalizers: %v, want a Conflict", err)
			}
			if got := get(t, name); !slices.Equal(got.Finalizers, tc.then) {
				t.Errorf("finalizers %q after the refused patch, want %q", got.Finalizers, tc.then)
			}
		})
	}
}

// TestSubnetFinalizerMemStore runs subnetFinalizerCases on the simulator's
// in-memory store; TestAPIServer runs them on the real API server.
func TestSubnetFinalizerMemStore(t *testing.T) {
	subnetFinalizerCases(t, kube.NewClient(kube.ClientOptions{Scheme: sim.Scheme(), Typed: true, WithStatus: []client.Object{&kubeovnv1.Subnet{}}}))
}

// vlanAdoptionCases runs the Vlan adoption patch on store: it adds the
// finalizer and drops the prune timers over a status Kube-OVN wrote after
// the copy was read, keeping everything else; it is refused with a
// Conflict, changing nothing, when the finalizers or the timers changed
// since the copy was read; it only drops the timers of a Vlan being
// deleted, and writes nothing when nothing is to change.
func vlanAdoptionCases(t *testing.T, c client.Client) {
	ctx := context.Background()
	const theirs, other = "kubeovn.io/kube-ovn-controller", "example.com/note"
	vlan := func(t *testing.T, name string, finalizers []string, annotations map[string]string) *kubeovnv1.Vlan {
		t.Helper()
		v := &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers, Annotations: annotations},
			Spec: kubeovnv1.VlanSpec{ID: 300, Provider: "pxadopt"}}
		if err := c.Create(ctx, v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	get := func(t *testing.T, name string) *kubeovnv1.Vlan { return getNamed[kubeovnv1.Vlan](t, c, name) }
	timers := func(value string) map[string]string {
		return map[string]string{v1alpha1.AnnotationDeletedSubnets: value, other: "kept"}
	}
	t.Run("over a newer status", func(t *testing.T) {
		stale := vlan(t, "adopt-status", []string{theirs}, timers("old=2100-01-01T00:00:00Z"))
		if err := c.Status().Patch(ctx, &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: stale.Name}},
			client.RawPatch(types.MergePatchType, []byte(`{"status":{"subnets":["adopt-status"]}}`))); err != nil {
			t.Fatal(err)
		}
		if err := network.AdoptPatch(ctx, c, stale); err != nil {
			t.Fatalf("the adoption patch over a newer status: %v", err)
		}
		got := get(t, stale.Name)
		if want := []string{theirs, v1alpha1.Finalizer}; !slices.Equal(got.Finalizers, want) {
			t.Errorf("finalizers %q, want %q", got.Finalizers, want)
		}
		if _, ok := got.Annotations[v1alpha1.AnnotationDeletedSubnets]; ok || got.Annotations[other] != "kept" {
			t.Errorf("annotations %v, want the timers gone and %s kept", got.Annotations, other)
		}
		if !slices.Equal(got.Status.Subnets, []string{"adopt-status"}) {
			t.Errorf("the patch lost the status Kube-OVN wrote: %+v", got.Status)
		}
		if stale.ResourceVersion != got.ResourceVersion {
			t.Errorf("the patched copy has resourceVersion %s, the server %s", stale.ResourceVersion, got.ResourceVersion)
		}
	})
	for _, tc := range []struct {
		name   string
		change func(v *kubeovnv1.Vlan)
	}{
		{"finalizers", func(v *kubeovnv1.Vlan) { v.Finalizers = nil }},
		{"timers", func(v *kubeovnv1.Vlan) { v.Annotations[v1alpha1.AnnotationDeletedSubnets] = "new=2100-01-01T00:01:00Z" }},
	} {
		t.Run(tc.name+" changed meanwhile", func(t *testing.T) {
			stale := vlan(t, "adopt-race-"+tc.name, []string{theirs}, timers("old=2100-01-01T00:00:00Z"))
			cur := get(t, stale.Name)
			tc.change(cur)
			if err := c.Update(ctx, cur); err != nil {
				t.Fatal(err)
			}
			want := get(t, stale.Name)
			if err := network.AdoptPatch(ctx, c, stale.DeepCopy()); !apierrors.IsConflict(err) {
				t.Fatalf("the patch over changed %s: %v, want a Conflict", tc.name, err)
			}
			if got := get(t, stale.Name); got.ResourceVersion != want.ResourceVersion {
				t.Errorf("the refused patch wrote: finalizers %q, annotations %v", got.Finalizers, got.Annotations)
			}
		})
	}
	t.Run("being deleted", func(t *testing.T) {
		v := vlan(t, "adopt-deleting", []string{theirs}, timers("old=2100-01-01T00:00:00Z"))
		if err := c.Delete(ctx, v); err != nil {
			t.Fatal(err)
		}
		v = get(t, v.Name)
		if err := network.AdoptPatch(ctx, c, v); err != nil {
			t.Fatal(err)
		}
		got := get(t, v.Name)
		if _, ok := got.Annotations[v1alpha1.AnnotationDeletedSubnets]; ok || !slices.Equal(got.Finalizers, []string{theirs}) {
			t.Errorf("a Vlan being deleted: finalizers %q, annotations %v; want only the timers gone", got.Finalizers, got.Annotations)
		}
	})
	t.Run("nothing to change", func(t *testing.T) {
		v := vlan(t, "adopt-none", []string{v1alpha1.Finalizer}, map[string]string{other: "kept"})
		rv := v.ResourceVersion
		if err := network.AdoptPatch(ctx, c, v); err != nil {
			t.Fatal(err)
		}
		if got := get(t, v.Name); got.ResourceVersion != rv {
			t.Errorf("a Vlan that needs nothing was written: resourceVersion %s, was %s", got.ResourceVersion, rv)
		}
	})
}

// TestVlanAdoptionMemStore runs vlanAdoptionCases on the simulator's
// in-memory store; TestAPIServer runs them on the real API server.
func TestVlanAdoptionMemStore(t *testing.T) {
	vlanAdoptionCases(t, kube.NewClient(kube.ClientOptions{Scheme: sim.Scheme(), Typed: true, WithStatus: []client.Object{&kubeovnv1.Vlan{}}}))
}
