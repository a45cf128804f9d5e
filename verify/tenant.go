package verify

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// The tenant-side CSI release installs the upstream proxmox-csi-plugin
// chart, whose node plugin DaemonSet carries app.kubernetes.io/name:
// proxmox-csi-plugin in kube-system.
const (
	LabelCSIName   = "app.kubernetes.io/name"
	CSIPluginName  = "proxmox-csi-plugin"
	CSINamespace   = "kube-system"
	credentialsVol = capmox.CredentialsVolume
	regionKey      = "region"
)

// Target names the cluster Collect checks.
type Target struct {
	// Namespace and Cluster (kubernetes-<name>) of the Cluster object.
	Namespace, Cluster string
	// CAPIVersion is the cluster.x-k8s.io version Machines are read in.
	CAPIVersion string
	// TenantKubeconfig is the tenant kubeconfig's file, for the fixes.
	TenantKubeconfig string
}

// expectOf reads what the cluster's controllers say its Nodes must show:
// the CCM's region from the credentials Secret its <cluster>-pccm
// Deployment mounts, and, when the <cluster>-pcsi-controller Deployment
// exists, the tenant's CSI node plugin Pods by Node.
func expectOf(ctx context.Context, mgmt, tenant client.Reader, t Target) (Expect, error) {
	e := Expect{Namespace: t.Namespace, Cluster: t.Cluster, TenantKubeconfig: t.TenantKubeconfig}
	ccm, err := deploymentOf(ctx, mgmt, t.Namespace, t.Cluster+"-pccm")
	if err != nil {
		return e, err
	}
	if ccm != nil {
		if e.Region, e.RegionSource, err = ccmRegion(ctx, mgmt, ccm); err != nil {
			return e, err
		}
	}
	csi, err := deploymentOf(ctx, mgmt, t.Namespace, t.Cluster+"-pcsi-controller")
	if err != nil || csi == nil {
		return e, err
	}
	e.CSINodes, e.CSIDaemonSets, err = csiNodePods(ctx, tenant)
	return e, err
}

func deploymentOf(ctx context.Context, mgmt client.Reader, namespace, name string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	switch err := mgmt.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cannot read Deployment %s/%s: %w", namespace, name, err)
	}
	return d, nil
}

// ccmRegion reads the region key of the credentials Secret the CCM
// Deployment mounts; "" when the Deployment mounts none or the Secret or
// key is missing (the CCM then does not start, which ControllerNotReady
// reports). Only that key is kept.
func ccmRegion(ctx context.Context, mgmt client.Reader, d *appsv1.Deployment) (region, source string, err error) {
	secret := ""
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == credentialsVol && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if secret == "" {
		return "", "", nil
	}
	s := &corev1.Secret{}
	switch err := mgmt.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: secret}, s); {
	case apierrors.IsNotFound(err):
		return "", "", nil
	case err != nil:
		return "", "", fmt.Errorf("cannot read the CCM's credentials Secret %s/%s for its region: %w", d.Namespace, secret, err)
	}
	return strings.TrimSpace(string(s.Data[regionKey])), fmt.Sprintf("Secret %s/%s", d.Namespace, secret), nil
}

// csiNodePods maps each Node to the Pods of the tenant's CSI node plugin
// DaemonSets on it, and names those DaemonSets.
func csiNodePods(ctx context.Context, tenant client.Reader) (map[string][]CSINodePod, []string, error) {
	var sets appsv1.DaemonSetList
	if err := tenant.List(ctx, &sets, client.InNamespace(CSINamespace), client.MatchingLabels{LabelCSIName: CSIPluginName}); err != nil {
		return nil, nil, fmt.Errorf("cannot list the tenant's CSI node plugin DaemonSets: %w", err)
	}
	byNode := map[string][]CSINodePod{}
	var names []string
	for _, ds := range sets.Items {
		names = append(names, ds.Name)
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err != nil {
			return nil, nil, fmt.Errorf("DaemonSet %s/%s: %w", CSINamespace, ds.Name, err)
		}
		var pods corev1.PodList
		if err := tenant.List(ctx, &pods, client.InNamespace(CSINamespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, nil, fmt.Errorf("cannot list the Pods of DaemonSet %s/%s: %w", CSINamespace, ds.Name, err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], podState(p))
			}
		}
	}
	sort.Strings(names)
	return byNode, names, nil
}

func podState(p corev1.Pod) CSINodePod {
	out := CSINodePod{Name: p.Name, Reason: string(p.Status.Phase)}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			out.Ready = true
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			out.Reason = cs.State.Waiting.Reason
			break
		}
	}
	return out
}
