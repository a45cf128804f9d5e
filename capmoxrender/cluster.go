package capmoxrender

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	pmv1alpha1 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha1"
	pmv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha2"
)

// API versions of the objects rendered next to the capmox ones.
const (
	KamajiAPIVersion    = "controlplane.cluster.x-k8s.io/v1alpha1"
	KindKamaji          = "KamajiControlPlane"
	TalosAPIVersion     = "bootstrap.cluster.x-k8s.io/v1alpha3"
	KindTalosConfigTmpl = "TalosConfigTemplate"
	FluxHelmAPIVersion  = "helm.toolkit.fluxcd.io/v2"
)

// RenderCluster renders what the management cluster needs for a tenant
// Kubernetes on the Proxmox substrate: the CAPI Cluster, the Kamaji control
// plane published as a LoadBalancer, the ProxmoxCluster, the CCM and CSI
// controllers with their service accounts, and the tenant-side CSI
// HelmRelease; with Options.PreDelete, the Job that frees the tenant's
// Proxmox volumes before the cluster is deleted. The output is deterministic; a refusal is a *RefusalError.
func RenderCluster(ctx context.Context, k Kubernetes, opts Options) ([]*unstructured.Unstructured, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p, err := planCluster(ctx, k, o)
	if err != nil {
		return nil, err
	}
	if o.PreDelete == PreDeleteOnly {
		if !p.csi {
			return nil, refuse("proxmox.csi.enabled", "the cluster runs no Proxmox CSI driver, so it has no Proxmox volumes for a pre-delete Job to free: delete it without one")
		}
		return renderPreDelete(p, o)
	}
	var out []*unstructured.Unstructured
	steps := []func(clusterPlan, Options) ([]*unstructured.Unstructured, error){
		renderCAPICluster, renderKamaji, renderProxmoxCluster, renderCCM, renderCSI, renderPreDelete,
	}
	for _, step := range steps {
		objs, err := step(p, o)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func renderCAPICluster(p clusterPlan, o Options) ([]*unstructured.Unstructured, error) {
	var obj any
	if o.Capmox == CapmoxV07 {
		c := &clusterv1beta1.Cluster{}
		c.APIVersion, c.Kind = clusterv1beta1.GroupVersion.String(), "Cluster"
		c.Name, c.Namespace = p.release, p.ns
		c.Spec.ControlPlaneRef = &corev1.ObjectReference{APIVersion: KamajiAPIVersion, Kind: KindKamaji, Name: p.release, Namespace: p.ns}
		c.Spec.InfrastructureRef = &corev1.ObjectReference{APIVersion: pmv1alpha1.GroupVersion.String(), Kind: capmox.KindProxmoxCluster, Name: p.release, Namespace: p.ns}
		obj = c
	} else {
		c := &clusterv1.Cluster{}
		c.APIVersion, c.Kind = clusterv1.GroupVersion.String(), "Cluster"
		c.Name, c.Namespace = p.release, p.ns
		c.Spec.ControlPlaneRef = clusterv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: KindKamaji, Name: p.release}
		c.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: capmox.Group, Kind: capmox.KindProxmoxCluster, Name: p.release}
		obj = c
	}
	u, err := typed(obj)
	if err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{u}, nil
}

// kamajiSpec is the part of KamajiControlPlane.spec the substrate decides:
// off-cluster workers cannot reach a ClusterIP, so the API server is
// published as a LoadBalancer.
type kamajiSpec struct {
	DataStoreName string        `json:"dataStoreName"`
	Replicas      int32         `json:"replicas"`
	Version       string        `json:"version"`
	Network       kamajiNetwork `json:"network"`
}

type kamajiNetwork struct {
	ServiceType string `json:"serviceType"`
}

func renderKamaji(p clusterPlan, _ Options) ([]*unstructured.Unstructured, error) {
	spec := kamajiSpec{DataStoreName: p.ns, Replicas: p.replicas, Version: p.version, Network: kamajiNetwork{ServiceType: string(corev1.ServiceTypeLoadBalancer)}}
	u, err := object(KamajiAPIVersion, KindKamaji, p.ns, p.release, nil, spec)
	if err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{u}, nil
}

// credentialsRef points capmox at the cluster's own credentials Secret in
// the release namespace; nil keeps capmox's controller-wide credentials.
func credentialsRef(p clusterPlan) *corev1.SecretReference {
	if p.capmoxSecret == "" {
		return nil
	}
	return &corev1.SecretReference{Name: p.capmoxSecret, Namespace: p.ns}
}

// renderProxmoxCluster never sets the cluster.x-k8s.io/managed-by
// annotation: with it CAPI never sets the ownerRef and capmox waits forever.
func renderProxmoxCluster(p clusterPlan, o Options) ([]*unstructured.Unstructured, error) {
	var (
		spec any
		gv   string
	)
	if o.Capmox == CapmoxV07 {
		s := pmv1alpha1.ProxmoxClusterSpec{ExternalManagedControlPlane: true, AllowedNodes: p.allowedNodes, DNSServers: p.dns,
			IPv4Config: &pmv1alpha1.IPConfigSpec{Addresses: p.pool.addresses, Prefix: p.pool.prefix, Gateway: p.pool.gateway}, CredentialsRef: credentialsRef(p)}
		if p.memoryAdjustment != nil {
			s.SchedulerHints = &pmv1alpha1.SchedulerHints{MemoryAdjustment: ptr(uint64(*p.memoryAdjustment))}
		}
		if v6 := p.pool.v6; v6 != nil {
			s.IPv6Config = &pmv1alpha1.IPConfigSpec{Addresses: v6.addresses, Prefix: v6.prefix, Gateway: v6.gateway}
		}
		if err := CheckProxmoxClusterV1alpha1(s); err != nil {
			return nil, err
		}
		spec, gv = s, pmv1alpha1.GroupVersion.String()
	} else {
		s := pmv1alpha2.ProxmoxClusterSpec{ExternalManagedControlPlane: ptr(true), AllowedNodes: p.allowedNodes, DNSServers: p.dns,
			IPv4Config: &pmv1alpha2.IPConfigSpec{Addresses: p.pool.addresses, Prefix: int32(p.pool.prefix), Gateway: p.pool.gateway}, CredentialsRef: credentialsRef(p)}
		if p.memoryAdjustment != nil {
			s.SchedulerHints = &pmv1alpha2.SchedulerHints{MemoryAdjustment: ptr(*p.memoryAdjustment)}
		}
		if v6 := p.pool.v6; v6 != nil {
			s.IPv6Config = &pmv1alpha2.IPConfigSpec{Addresses: v6.addresses, Prefix: int32(v6.prefix), Gateway: v6.gateway}
		}
		if err := CheckProxmoxClusterV1alpha2(s); err != nil {
			return nil, err
		}
		spec, gv = s, pmv1alpha2.GroupVersion.String()
	}
	u, err := object(gv, capmox.KindProxmoxCluster, p.ns, p.release, nil, spec)
	if err != nil {
		return nil, fmt.Errorf("cannot render ProxmoxCluster: %w", err)
	}
	return []*unstructured.Unstructured{u}, nil
}
