package kubegateway

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

const (
	// ChassisAnnotation is where Kube-OVN records a Node's OVN chassis name.
	ChassisAnnotation = "ovn.kubernetes.io/chassis"
	// readyLabelSuffix follows the provider network's name in the label
	// Kube-OVN sets on a Node whose trunk interface is ready.
	readyLabelSuffix = ".provider-network.kubernetes.io/ready"
)

// ReadyLabel is the Node label "<providerNetwork>.provider-network.kubernetes.io/ready"
// that Kube-OVN sets to "true" once the provider network is up on the Node.
func ReadyLabel(providerNetwork string) string { return providerNetwork + readyLabelSuffix }

// Candidates returns the chassis set of a provider network: every Node with
// the ready label set to "true", a non-empty chassis annotation and no
// deletion timestamp, sorted by Node name. A chassis shared by several Nodes
// appears once, under the first Node name.
func Candidates[N metav1.Object](providerNetwork string, nodes []N) []ovngateway.Candidate {
	label := ReadyLabel(providerNetwork)
	var out []ovngateway.Candidate
	for _, n := range nodes {
		chassis := strings.TrimSpace(n.GetAnnotations()[ChassisAnnotation])
		if n.GetLabels()[label] != "true" || chassis == "" || n.GetDeletionTimestamp() != nil {
			continue
		}
		out = append(out, ovngateway.Candidate{Node: n.GetName(), Chassis: chassis})
	}
	slices.SortFunc(out, func(a, b ovngateway.Candidate) int { return strings.Compare(a.Node, b.Node) })
	seen := make(map[string]bool, len(out))
	return slices.DeleteFunc(out, func(c ovngateway.Candidate) bool {
		dup := seen[c.Chassis]
		seen[c.Chassis] = true
		return dup
	})
}

// NodeChanged reports whether a Node update can change the chassis set of
// providerNetwork: the ready label, the chassis annotation or the deletion
// timestamp changed. A controller resyncs every network of that provider
// network when it does.
func NodeChanged(providerNetwork string, old, updated metav1.Object) bool {
	label := ReadyLabel(providerNetwork)
	return old.GetLabels()[label] != updated.GetLabels()[label] ||
		old.GetAnnotations()[ChassisAnnotation] != updated.GetAnnotations()[ChassisAnnotation] ||
		(old.GetDeletionTimestamp() == nil) != (updated.GetDeletionTimestamp() == nil)
}
