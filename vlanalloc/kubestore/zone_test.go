package kubestore_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

func TestZoneFromAPI(t *testing.T) {
	obj := &v1alpha1.ProxmoxNetworkZone{
		ObjectMeta: metav1.ObjectMeta{Name: "zone-a"},
		Spec: v1alpha1.ProxmoxNetworkZoneSpec{
			Bridge: "vmbr1", ProviderNetwork: "pxtenant", VLANRanges: []string{"100-104"}, ReservedVLANs: []int32{101},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold", "silver"}}}},
			StaticAssignments: []v1alpha1.StaticVLANAssignment{{Namespace: "t", Name: "b", VLAN: 9}, {Namespace: "t", Name: "a", VLAN: 7}},
		},
	}
	z, err := kubestore.ZoneFromAPI(obj)
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Name, Provider string
		Allocatable    string
		Static         []vlanalloc.StaticAssignment
		Gold, Bronze   bool
		NoLabels       bool
	}
	allocatable := z.Allocatable()
	got := view{Name: z.Name(), Provider: z.ProviderNetwork(), Allocatable: allocatable.String(), Static: z.StaticAssignments(),
		Gold: z.Admits(map[string]string{"tier": "gold"}), Bronze: z.Admits(map[string]string{"tier": "bronze"}), NoLabels: z.Admits(nil)}
	want := view{Name: "zone-a", Provider: "pxtenant", Allocatable: "100,102-104",
		Static: []vlanalloc.StaticAssignment{{Network: vlanalloc.NetworkRef{Namespace: "t", Name: "a"}, VID: 7}, {Network: vlanalloc.NetworkRef{Namespace: "t", Name: "b"}, VID: 9}},
		Gold:   true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}

	obj.Spec.NamespaceSelector = nil
	z, err = kubestore.ZoneFromAPI(obj)
	if err != nil {
		t.Fatal(err)
	}
	if !z.Admits(nil) || !z.Admits(map[string]string{"tier": "bronze"}) {
		t.Error("a zone without namespaceSelector must admit every namespace")
	}

	obj.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
	if _, err := kubestore.ZoneFromAPI(obj); !errors.Is(err, vlanalloc.ErrInvalidZone) {
		t.Errorf("a selector the API would not accept must be ErrInvalidZone, got %v", err)
	}
	obj.Spec.NamespaceSelector = nil
	obj.Spec.VLANRanges = []string{"0"}
	if _, err := kubestore.ZoneFromAPI(obj); err == nil || err.Error() != `cannot build VLAN zone "zone-a": vlan range "0": 0 is outside 1-4094` {
		t.Errorf("got %v", err)
	}
}
