package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is kubeovn.io/v1.
	GroupVersion = schema.GroupVersion{Group: "kubeovn.io", Version: "v1"}

	// SchemeBuilder registers the mirrored kinds.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the mirrored kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(
		&Vlan{}, &VlanList{},
		&Subnet{}, &SubnetList{},
		&ProviderNetwork{}, &ProviderNetworkList{},
	)
}
