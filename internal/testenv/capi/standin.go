package capi

import (
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StandInCRD returns a namespaced CRD for group/version, Kind kind, for a
// provider the module proxy does not serve: it keeps any spec and status
// (x-kubernetes-preserve-unknown-fields, no validation at all), has a status
// subresource, and carries the Cluster API contract labels
// cluster.x-k8s.io/<contract>: version for each contract given, which Cluster
// API reads to pick the version of a referenced object. It judges nothing
// about the objects; a test using it says so.
func StandInCRD(group, version, kind string, contracts ...string) *apiextv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	labels := map[string]string{}
	for _, c := range contracts {
		labels["cluster.x-k8s.io/"+c] = version
	}
	preserve := true
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, Labels: labels},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextv1.CustomResourceDefinitionNames{
				Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind),
			},
			Scope: apiextv1.NamespaceScoped,
			Versions: []apiextv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
				Subresources: &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}
