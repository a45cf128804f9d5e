package v1alpha1

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProxmoxVLANClaimSpec says which network holds one VLAN ID on one provider
// network. It never changes: a claim is created whole and deleted whole.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
type ProxmoxVLANClaimSpec struct {
	// ProviderNetwork is the Kube-OVN ProviderNetwork the ID is taken on.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=12
	ProviderNetwork string `json:"providerNetwork"`
	// VLAN is the claimed 802.1Q ID.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4094
	VLAN int32 `json:"vlan"`
	// Zone is the ProxmoxNetworkZone the ID was allocated from.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Zone string `json:"zone"`
	// Network is the ProxmoxNetwork holding the ID.
	Network NetworkReference `json:"network"`
	// VLANName is the Kube-OVN Vlan (named after the subnet) that carries the
	// ID once it exists.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	VLANName string `json:"vlanName"`
}

// NetworkReference names a ProxmoxNetwork.
type NetworkReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// String returns "<namespace>/<name>".
func (r NetworkReference) String() string { return r.Namespace + "/" + r.Name }

// ProxmoxVLANClaim records that one VLAN ID of one Kube-OVN provider network
// belongs to one ProxmoxNetwork. Every writer names it
// "<providerNetwork>.<vlan>", so two claims for one ID cannot exist at once:
// the API server answers a second create with AlreadyExists. Only the
// controller writes claims.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=pxvlan
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerNetwork`
// +kubebuilder:printcolumn:name="VLAN",type=integer,JSONPath=`.spec.vlan`
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zone`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.network.namespace`
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProxmoxVLANClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProxmoxVLANClaimSpec `json:"spec"`
}

// ProxmoxVLANClaimList is a list of ProxmoxVLANClaim.
// +kubebuilder:object:root=true
type ProxmoxVLANClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProxmoxVLANClaim `json:"items"`
}

// VLANClaimName is the only name a ProxmoxVLANClaim for vid on
// providerNetwork may have.
func VLANClaimName(providerNetwork string, vid int) string {
	return providerNetwork + "." + strconv.Itoa(vid)
}
