package verify

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/poolheal"
)

// Sources are where Gather reads.
type Sources struct {
	// Management reads the management cluster, and Mapper says which
	// kinds it serves (a client.Client's RESTMapper asks discovery).
	Management client.Reader
	Mapper     meta.RESTMapper
	// Tenant reads the tenant cluster; nil reads nothing of it.
	Tenant client.Reader
	// Proxmox reads the Proxmox VE API with the token ProxmoxTokenID
	// names; nil reads nothing of Proxmox VE.
	Proxmox        Getter
	ProxmoxTokenID string
}

// The kinds Gather reads besides the core ones, and the versions it
// reads them in, newest first.
var (
	machineKind           = schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Machine"}
	machineDeploymentKind = schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "MachineDeployment"}
	proxmoxClusterKind    = schema.GroupKind{Group: capmox.Group, Kind: capmox.KindProxmoxCluster}
	proxmoxMachineKind    = schema.GroupKind{Group: capmox.Group, Kind: capmox.KindProxmoxMachine}
	ipPoolKind            = schema.GroupKind{Group: capmox.IPAMGroup, Kind: capmox.KindInClusterIPPool}
	talosConfigKind       = schema.GroupKind{Group: "bootstrap.cluster.x-k8s.io", Kind: "TalosConfig"}
	networkKind           = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "ProxmoxNetwork"}

	capmoxVersions      = []string{"v1alpha2", "v1alpha1"}
	ipamVersions        = []string{"v1alpha2", "v1alpha1"}
	talosConfigVersions = []string{"v1alpha3"}
	networkVersions     = []string{v1alpha1.GroupVersion.Version}
)

// Gather reads what Judge needs of t, once each: the management cluster,
// then Proxmox VE, then the tenant cluster. It only reads.
func Gather(ctx context.Context, src Sources, t Target) (*Snapshot, error) {
	if t.CAPIVersion == "" {
		t.CAPIVersion = DefaultCAPIVersion
	}
	g := gatherer{src: src, t: t}
	s := &Snapshot{Target: t, Taken: time.Now()}
	if err := g.management(ctx, &s.Management); err != nil {
		return nil, err
	}
	if src.Proxmox != nil {
		p, err := readProxmox(ctx, src.Proxmox, src.ProxmoxTokenID, indexWorkers(s.Management.ProxmoxMachines))
		if err != nil {
			return nil, err
		}
		s.Proxmox = p
	}
	if src.Tenant != nil {
		if err := g.tenant(ctx, &s.Tenant, s.Management.CSIController != nil); err != nil {
			return nil, err
		}
	}
	return s, nil
}

type gatherer struct {
	src Sources
	t   Target
}

// management reads the management cluster's side of the target; without
// a cluster name, what is the namespace's alone.
func (g gatherer) management(ctx context.Context, m *Management) error {
	pool, err := g.servedMapping(ipPoolKind, ipamVersions)
	if err != nil {
		return err
	}
	m.IPAMServed = pool != nil
	if m.Machines, err = g.machines(ctx); err != nil {
		return err
	}
	if m.ProxmoxMachines, err = g.proxmoxMachines(ctx); err != nil {
		return err
	}
	if m.Networks, err = g.networks(ctx); err != nil {
		return err
	}
	if m.HealingPools, err = g.healingPools(ctx); err != nil {
		return err
	}
	if g.t.Cluster == "" {
		return nil
	}
	return g.cluster(ctx, m)
}

// cluster reads the objects of the target cluster itself.
func (g gatherer) cluster(ctx context.Context, m *Management) error {
	pc, err := g.getServed(ctx, proxmoxClusterKind, capmoxVersions, g.t.Cluster)
	if err != nil {
		return err
	}
	if pc != nil {
		m.ProxmoxCluster = &ProxmoxCluster{Annotations: pc.GetAnnotations()}
	}
	if m.Service, err = g.service(ctx); err != nil {
		return err
	}
	if m.TalosConfigs, err = g.talosConfigs(ctx, m.Machines); err != nil {
		return err
	}
	if err := g.controllers(ctx, m); err != nil {
		return err
	}
	m.IPPool, err = g.ipPool(ctx, g.t.Cluster+"-v4-icip")
	return err
}

func (g gatherer) service(ctx context.Context) (*Service, error) {
	svc := &corev1.Service{}
	if ok, err := g.get(ctx, "Service", g.t.Cluster, svc); !ok {
		return nil, err
	}
	out := &Service{Type: string(svc.Spec.Type)}
	for _, i := range svc.Status.LoadBalancer.Ingress {
		if i.IP != "" {
			out.LoadBalancerIP = i.IP
			break
		}
	}
	return out, nil
}

// machines lists the namespace's Machines in the target's Cluster API
// version.
func (g gatherer) machines(ctx context.Context) ([]Machine, error) {
	ml := &unstructured.UnstructuredList{}
	ml.SetGroupVersionKind(machineKind.WithVersion(g.t.CAPIVersion).GroupVersion().WithKind("MachineList"))
	if err := g.src.Management.List(ctx, ml, client.InNamespace(g.t.Namespace)); err != nil {
		return nil, fmt.Errorf("cannot list the Machines of namespace %s: %w", g.t.Namespace, err)
	}
	out := make([]Machine, 0, len(ml.Items))
	for _, u := range ml.Items {
		m := Machine{Name: u.GetName(), Labels: u.GetLabels(), Address: machineAddress(u), Deleting: u.GetDeletionTimestamp() != nil}
		m.ProviderID, _, _ = unstructured.NestedString(u.Object, "spec", "providerID")
		m.NodeRef, _, _ = unstructured.NestedString(u.Object, "status", "nodeRef", "name")
		m.InfrastructureRef, _, _ = unstructured.NestedString(u.Object, "spec", "infrastructureRef", "name")
		m.BootstrapKind, _, _ = unstructured.NestedString(u.Object, "spec", "bootstrap", "configRef", "kind")
		m.BootstrapName, _, _ = unstructured.NestedString(u.Object, "spec", "bootstrap", "configRef", "name")
		m.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
		out = append(out, m)
	}
	return out, nil
}

// machineAddress is the Machine's InternalIP from status.addresses, else
// the first address it reports, else "".
func machineAddress(m unstructured.Unstructured) string {
	addrs, _, _ := unstructured.NestedSlice(m.Object, "status", "addresses")
	first := ""
	for _, a := range addrs {
		entry, _ := a.(map[string]any)
		addr, _ := entry["address"].(string)
		if first == "" {
			first = addr
		}
		if t, _ := entry["type"].(string); t == "InternalIP" && addr != "" {
			return addr
		}
	}
	return first
}

// healingPools are the namespace's MachineDeployments, in the target's
// Cluster API version, that carry poolheal.Label; none when the API
// server serves no MachineDeployment.
func (g gatherer) healingPools(ctx context.Context) (map[string]bool, error) {
	list, err := g.listServed(ctx, machineDeploymentKind, []string{g.t.CAPIVersion})
	if err != nil || list == nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, md := range list.Items {
		if md.GetLabels()[poolheal.Label] == "true" {
			out[md.GetName()] = true
		}
	}
	return out, nil
}

// proxmoxMachines lists the namespace's ProxmoxMachines in the newest
// version served; none when capmox is not installed.
func (g gatherer) proxmoxMachines(ctx context.Context) ([]ProxmoxMachine, error) {
	return listServedAs(ctx, g, proxmoxMachineKind, capmoxVersions, proxmoxMachineOf)
}

// talosConfigs reads the host entries of the TalosConfig of every Machine
// of the cluster; nil when the API server serves no TalosConfig.
func (g gatherer) talosConfigs(ctx context.Context, machines []Machine) (map[string][]HostEntry, error) {
	tm, err := g.servedMapping(talosConfigKind, talosConfigVersions)
	if err != nil || tm == nil {
		return nil, err
	}
	out := map[string][]HostEntry{}
	for _, m := range machines {
		name := m.BootstrapName
		if m.Labels[capmox.LabelClusterName] != g.t.Cluster || m.BootstrapKind != talosConfigKind.Kind || name == "" {
			continue
		}
		if _, ok := out[name]; ok {
			continue
		}
		tc := &unstructured.Unstructured{}
		tc.SetGroupVersionKind(tm.GroupVersionKind)
		ok, err := g.get(ctx, talosConfigKind.Kind, name, tc)
		if err != nil {
			return nil, err
		}
		if ok {
			out[name] = hostEntries(tc)
		}
	}
	return out, nil
}

// hostEntries are the entries of the config's extraHostEntries patches.
func hostEntries(config *unstructured.Unstructured) []HostEntry {
	var out []HostEntry
	patches, _, _ := unstructured.NestedSlice(config.Object, "spec", "configPatches")
	for _, p := range patches {
		m, ok := p.(map[string]any)
		if !ok || m["path"] != capmox.HostEntriesPath {
			continue
		}
		entries, _ := m["value"].([]any)
		for _, e := range entries {
			em, _ := e.(map[string]any)
			h := HostEntry{}
			h.IP, _ = em["ip"].(string)
			aliases, _ := em["aliases"].([]any)
			for _, a := range aliases {
				if s, ok := a.(string); ok {
					h.Aliases = append(h.Aliases, s)
				}
			}
			out = append(out, h)
		}
	}
	return out
}

// controllers reads the cluster's CCM and CSI controller Deployments, and
// the region of the credentials Secret the CCM mounts.
func (g gatherer) controllers(ctx context.Context, m *Management) error {
	ccm, err := g.deployment(ctx, g.t.Cluster+capmox.SuffixCCM)
	if err != nil {
		return err
	}
	if ccm != nil {
		m.CCM = deploymentOf(ccm)
		if m.Region, m.RegionSource, err = g.ccmRegion(ctx, ccm); err != nil {
			return err
		}
	}
	csi, err := g.deployment(ctx, g.t.Cluster+capmox.SuffixCSIController)
	if err != nil || csi == nil {
		return err
	}
	m.CSIController = deploymentOf(csi)
	return nil
}

func (g gatherer) deployment(ctx context.Context, name string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if ok, err := g.get(ctx, "Deployment", name, d); !ok {
		return nil, err
	}
	return d, nil
}

func deploymentOf(d *appsv1.Deployment) *Deployment {
	out := &Deployment{Replicas: 1, Available: int64(d.Status.AvailableReplicas)}
	if d.Spec.Replicas != nil {
		out.Replicas = int64(*d.Spec.Replicas)
	}
	return out
}

// ccmRegion reads the region key of the credentials Secret the CCM
// Deployment mounts; "" when the Deployment mounts none or the Secret or
// key is missing (the CCM then does not start, which ControllerNotReady
// reports). Only that key is kept.
func (g gatherer) ccmRegion(ctx context.Context, d *appsv1.Deployment) (region, source string, err error) {
	secret := ""
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == capmox.CredentialsVolume && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if secret == "" {
		return "", "", nil
	}
	s := &corev1.Secret{}
	switch err := g.src.Management.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: secret}, s); {
	case apierrors.IsNotFound(err):
		return "", "", nil
	case err != nil:
		return "", "", fmt.Errorf("cannot read the CCM's credentials Secret %s/%s for its region: %w", d.Namespace, secret, err)
	}
	return strings.TrimSpace(string(s.Data[regionKey])), fmt.Sprintf("Secret %s/%s", d.Namespace, secret), nil
}

// regionKey is the key of the CCM's credentials Secret that names its
// region.
const regionKey = "region"

func (g gatherer) ipPool(ctx context.Context, name string) (*IPPool, error) {
	u, err := g.getServed(ctx, ipPoolKind, ipamVersions, name)
	if err != nil || u == nil {
		return nil, err
	}
	free, found, _ := unstructured.NestedInt64(u.Object, "status", "ipAddresses", "free")
	return &IPPool{Name: u.GetName(), Free: free, FreeKnown: found}, nil
}

// networks reads the namespace's ProxmoxNetworks with their
// GatewayFailover condition; none when the API server serves none.
func (g gatherer) networks(ctx context.Context) ([]Network, error) {
	return listServedAs(ctx, g, networkKind, networkVersions, func(n unstructured.Unstructured) (Network, error) {
		c, err := failoverCondition(n)
		return Network{Name: n.GetName(), Failover: c}, err
	})
}

// servedMapping is gk's mapping in the first of versions the API server
// serves; nil, and no error, when it serves none.
func (g gatherer) servedMapping(gk schema.GroupKind, versions []string) (*meta.RESTMapping, error) {
	m, err := g.src.Mapper.RESTMapping(gk, versions...)
	switch {
	case meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cannot ask the API server whether it serves %s: %w", gk.Kind, err)
	}
	return m, nil
}

// listServed lists kind gk of the namespace in the first of versions the
// API server serves; nil, and no error, when it serves none.
func (g gatherer) listServed(ctx context.Context, gk schema.GroupKind, versions []string) (*unstructured.UnstructuredList, error) {
	m, err := g.servedMapping(gk, versions)
	if m == nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(gk.Kind + "List"))
	if err := g.src.Management.List(ctx, list, client.InNamespace(g.t.Namespace)); err != nil {
		return nil, fmt.Errorf("cannot list the %ss of namespace %s: %w", gk.Kind, g.t.Namespace, err)
	}
	return list, nil
}

// listServedAs lists kind gk as listServed does and reads each item with
// of; nil when the API server serves none of versions.
func listServedAs[T any](ctx context.Context, g gatherer, gk schema.GroupKind, versions []string, of func(unstructured.Unstructured) (T, error)) ([]T, error) {
	list, err := g.listServed(ctx, gk, versions)
	if err != nil || list == nil {
		return nil, err
	}
	out := make([]T, 0, len(list.Items))
	for _, u := range list.Items {
		v, err := of(u)
		if err != nil {
			return nil, fmt.Errorf("cannot read %s %s/%s: %w", gk.Kind, g.t.Namespace, u.GetName(), err)
		}
		out = append(out, v)
	}
	return out, nil
}

// getServed reads name of kind gk in the namespace, in the first of
// versions the API server serves; nil when it serves none of them or the
// object is absent.
func (g gatherer) getServed(ctx context.Context, gk schema.GroupKind, versions []string, name string) (*unstructured.Unstructured, error) {
	m, err := g.servedMapping(gk, versions)
	if m == nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind)
	if ok, err := g.get(ctx, gk.Kind, name, u); !ok {
		return nil, err
	}
	return u, nil
}

// get reads name of the namespace, a kind, into obj; false, and no error,
// when it is absent.
func (g gatherer) get(ctx context.Context, kind, name string, obj client.Object) (bool, error) {
	switch err := g.src.Management.Get(ctx, client.ObjectKey{Namespace: g.t.Namespace, Name: name}, obj); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cannot read %s %s/%s: %w", kind, g.t.Namespace, name, err)
	}
	return true, nil
}
