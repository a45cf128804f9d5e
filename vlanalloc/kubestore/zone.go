package kubestore

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// ZoneFromAPI builds the vlanalloc.Zone of a ProxmoxNetworkZone: its ranges,
// reserved IDs and static assignments, and its namespaceSelector as the
// zone's namespace admission. A selector the API server would refuse is an
// error wrapping vlanalloc.ErrInvalidZone.
func ZoneFromAPI(obj *v1alpha1.ProxmoxNetworkZone) (*vlanalloc.Zone, error) {
	spec := vlanalloc.ZoneSpec{
		Name:            obj.Name,
		ProviderNetwork: obj.Spec.ProviderNetwork,
		Ranges:          obj.Spec.VLANRanges,
	}
	for _, vid := range obj.Spec.ReservedVLANs {
		spec.Reserved = append(spec.Reserved, int(vid))
	}
	for _, s := range obj.Spec.StaticAssignments {
		spec.Static = append(spec.Static, vlanalloc.StaticAssignment{
			Network: vlanalloc.NetworkRef{Namespace: s.Namespace, Name: s.Name},
			VID:     int(s.VLAN),
		})
	}
	if obj.Spec.MaxNetworksPerNamespace != nil {
		spec.MaxPerNamespace = int(*obj.Spec.MaxNetworksPerNamespace)
	}
	if obj.Spec.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(obj.Spec.NamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("cannot build VLAN zone %q: %w: namespaceSelector: %w", obj.Name, vlanalloc.ErrInvalidZone, err)
		}
		spec.AdmitNamespace = func(namespaceLabels map[string]string) bool {
			return sel.Matches(labels.Set(namespaceLabels))
		}
	}
	return vlanalloc.NewZone(spec)
}
