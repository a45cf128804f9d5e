package network_test

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fakes/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

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
	get := func(t *testing.T, name string) *kubeovnv1.Subnet {
		t.Helper()
		s := &kubeovnv1.Subnet{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
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
