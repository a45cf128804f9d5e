package verify

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// AnnotationManagedBy marks a CAPI infrastructure cluster as managed outside
// Cluster API.
const AnnotationManagedBy = capmox.AnnotationManagedBy

// Finding codes of CheckManagement.
const (
	CodeIPAMProviderMissing = "IPAMProviderMissing"
	CodeManagedByAnnotation = "ManagedByAnnotation"
)

// ManagementFinding is a problem of the management cluster that keeps the
// workers of a cluster from being created at all.
type ManagementFinding struct {
	Code    string `json:"code"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
	// Warning marks a finding that does not keep the workers out (a
	// gateway without failover): it is reported, but verify still passes.
	Warning bool `json:"warning,omitempty"`
	// VMID and Node name the Proxmox guest a finding is about, when it is
	// about one (the worker VM checks).
	VMID int    `json:"vmid,omitempty"`
	Node string `json:"node,omitempty"`
}

// capmoxVersions are the ProxmoxCluster versions capmox serves, newest first.
var capmoxVersions = []string{"v1alpha2", "v1alpha1"}

// ipamVersions are the InClusterIPPool versions the in-cluster IPAM provider
// serves.
var ipamVersions = []string{"v1alpha2", "v1alpha1"}

// CheckManagement looks for the management-cluster mistakes that keep a
// Proxmox-backed cluster's workers out: no CAPI in-cluster IPAM provider
// (capmox has no DHCP mode, so the ProxmoxCluster never becomes Ready), a
// ProxmoxCluster carrying cluster.x-k8s.io/managed-by (Cluster API then
// never sets its ownerRef and capmox waits forever), a control plane
// Service without a LoadBalancer address, and a Machine whose TalosConfig
// maps no (or another) address to the control plane endpoint. It also
// warns (Warning set) of a ProxmoxNetwork of the namespace whose gateway
// group cannot fail over, and of workers of a pool with proxmox.ha that
// share a Proxmox node. It only reads.
//
// mapper says which kinds the API server serves (a client.Client's
// RESTMapper does discovery).
func CheckManagement(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace, cluster string) ([]ManagementFinding, error) {
	var out []ManagementFinding
	switch _, err := mapper.RESTMapping(schema.GroupKind{Group: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool"}, ipamVersions...); {
	case err == nil:
	case meta.IsNoMatchError(err):
		out = append(out, ManagementFinding{
			Code:    CodeIPAMProviderMissing,
			Problem: "the management cluster serves no InClusterIPPool: the CAPI in-cluster IPAM provider is not installed, and capmox has no DHCP mode, so the ProxmoxCluster never becomes Ready",
			Fix:     "install the cozystack.capi-provider-ipam-in-cluster package (cozystack.capi-provider-infra-proxmox pulls it in)",
		})
	default:
		return nil, fmt.Errorf("cannot ask the API server whether it serves InClusterIPPool: %w", err)
	}
	pc, err := proxmoxCluster(ctx, mgmt, mapper, namespace, cluster)
	if err != nil {
		return nil, err
	}
	if pc != nil {
		if _, ok := pc.GetAnnotations()[AnnotationManagedBy]; ok {
			out = append(out, ManagementFinding{
				Code:    CodeManagedByAnnotation,
				Problem: fmt.Sprintf("ProxmoxCluster %s/%s carries %s: Cluster API never sets its ownerRef, capmox stops at \"Waiting for Cluster Controller to set OwnerRef\" and no Machine gets an address", namespace, cluster, AnnotationManagedBy),
				Fix:     fmt.Sprintf("kubectl -n %s annotate proxmoxcluster %s %s-", namespace, cluster, AnnotationManagedBy),
			})
		}
	}
	ep, err := checkEndpoint(ctx, mgmt, mapper, namespace, cluster)
	if err != nil {
		return nil, err
	}
	ctl, err := checkControllers(ctx, mgmt, mapper, namespace, cluster)
	if err != nil {
		return nil, err
	}
	gw, err := checkGateways(ctx, mgmt, mapper, namespace)
	if err != nil {
		return nil, err
	}
	ha, err := checkPoolHA(ctx, mgmt, mapper, namespace, cluster)
	if err != nil {
		return nil, err
	}
	return slices.Concat(out, ep, ctl, gw, ha), nil
}

// proxmoxCluster reads the ProxmoxCluster in whichever version capmox
// serves; nil when there is none.
func proxmoxCluster(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace, name string) (*unstructured.Unstructured, error) {
	return getServed(ctx, mgmt, mapper, schema.GroupKind{Group: "infrastructure.cluster.x-k8s.io", Kind: "ProxmoxCluster"}, capmoxVersions, namespace, name)
}

// servedMapping is gk's mapping in the first of versions the API server
// serves; nil, and no error, when it serves none.
func servedMapping(mapper meta.RESTMapper, gk schema.GroupKind, versions []string) (*meta.RESTMapping, error) {
	m, err := mapper.RESTMapping(gk, versions...)
	switch {
	case meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cannot ask the API server whether it serves %s: %w", gk.Kind, err)
	}
	return m, nil
}

// listServed lists kind gk of namespace (matching opts) in the first of
// versions the API server serves; nil, and no error, when it serves none.
func listServed(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, gk schema.GroupKind, versions []string, namespace string, opts ...client.ListOption) (*unstructured.UnstructuredList, error) {
	m, err := servedMapping(mapper, gk, versions)
	if m == nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(gk.Kind + "List"))
	if err := mgmt.List(ctx, list, append([]client.ListOption{client.InNamespace(namespace)}, opts...)...); err != nil {
		return nil, fmt.Errorf("cannot list the %ss of namespace %s: %w", gk.Kind, namespace, err)
	}
	return list, nil
}

// getServed reads namespace/name of kind gk in the first of versions the
// API server serves; nil when it serves none of them or the object is
// absent.
func getServed(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, gk schema.GroupKind, versions []string, namespace, name string) (*unstructured.Unstructured, error) {
	m, err := servedMapping(mapper, gk, versions)
	if m == nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind)
	switch err := mgmt.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); {
	case err == nil:
		return u, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("cannot read %s %s/%s: %w", gk.Kind, namespace, name, err)
	}
}
