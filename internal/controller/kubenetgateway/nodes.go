package kubenetgateway

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
)

// NodeListGVK is the kind the adapter lists Nodes as (metadata only).
var NodeListGVK = corev1.SchemeGroupVersion.WithKind("NodeList")

// NodeGVK is the kind of one Node's metadata.
var NodeGVK = corev1.SchemeGroupVersion.WithKind("Node")

// ChangedProviders returns the provider networks, among providers, whose
// chassis set a Node event may change: for an update, those whose ready
// label, the chassis annotation or the deletion timestamp changed (see
// kubegateway.NodeChanged); for an add or a delete (old or updated nil),
// those on which the Node is ready.
func ChangedProviders(providers []string, old, updated metav1.Object) []string {
	var out []string
	for _, p := range providers {
		switch {
		case old == nil && updated == nil:
		case old == nil:
			if readyOn(p, updated) {
				out = append(out, p)
			}
		case updated == nil:
			if readyOn(p, old) {
				out = append(out, p)
			}
		case kubegateway.NodeChanged(p, old, updated):
			out = append(out, p)
		}
	}
	return out
}

func readyOn(provider string, n metav1.Object) bool {
	return n.GetLabels()[kubegateway.ReadyLabel(provider)] == "true"
}
