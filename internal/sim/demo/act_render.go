package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/admission"
	pmv1alpha1 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// alphaCluster and alphaPool are tenant alpha's cluster and node pool, as
// the tenant writes them; the pool selects the template built above.
const alphaCluster = `apiVersion: apps.cozystack.io/v1alpha1
kind: Kubernetes
metadata: {name: prod, namespace: tenant-alpha}
spec:
  version: v1.35.2
  substrate: proxmox
  proxmox:
    dnsServers: [1.1.1.1]
    ipv4Config: {addresses: [10.0.0.180-10.0.0.185], prefix: 24, gateway: 10.0.0.1}
    ccm: {credentialsSecretName: proxmox-credentials}
    csi:
      enabled: true
      credentialsSecretName: proxmox-credentials
      storageClasses: [{name: proxmox, storage: alpha-disks, fstype: ext4, reclaimPolicy: Delete}]
`

const alphaPool = `apiVersion: apps.cozystack.io/v1alpha1
kind: KubernetesNodes
metadata: {name: prod-md0, namespace: tenant-alpha}
spec:
  cluster: prod
  substrate: proxmox
  version: v1.35.2
  minReplicas: 2
  maxReplicas: 2
  resources: {cpu: 2, memory: 4Gi}
  proxmox:
    templateTags: [cozystack, schematic-ce4c9805, talos, talos-v1.13.6]
    network: {bridge: vmbr0}
    pool: tenant-alpha
    dnsServers: [1.1.1.1]
`

var actRender = Act{
	Name: "tenant alpha's cluster and node pool render to capmox objects",
	Play: func(ctx context.Context, s *Stage) error {
		objs, err := renderAlpha(ctx)
		if err != nil {
			return err
		}
		v, err := demoValidator()
		if err != nil {
			return err
		}
		var refusals []string
		s.Table([]string{"API VERSION", "KIND", "NAME", "CHECKS"}, func(row func(...any)) {
			for _, o := range objs {
				verdict := "ok"
				if err := checkRendered(v, o); err != nil {
					verdict = "REFUSED: " + err.Error()
					refusals = append(refusals, o.GetKind()+" "+o.GetName()+": "+err.Error())
				}
				row(o.GetAPIVersion(), o.GetKind(), o.GetName(), verdict)
			}
		})
		s.Check(CheckRenderRefusals, len(refusals) == 0, strings.Join(refusals, "; "))
		return nil
	},
}

// renderAlpha renders tenant alpha's cluster and pool for capmox v0.7.
func renderAlpha(ctx context.Context) ([]*unstructured.Unstructured, error) {
	k, err := capmoxrender.ParseKubernetes([]byte(alphaCluster))
	if err != nil {
		return nil, fmt.Errorf("cannot read tenant alpha's cluster: %w", err)
	}
	n, err := capmoxrender.ParseKubernetesNodes([]byte(alphaPool))
	if err != nil {
		return nil, fmt.Errorf("cannot read tenant alpha's node pool: %w", err)
	}
	opts := capmoxrender.Options{Capmox: capmoxrender.CapmoxV07}
	cluster, err := capmoxrender.RenderCluster(ctx, k, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot render tenant alpha's cluster: %w", err)
	}
	nodes, err := capmoxrender.RenderNodes(ctx, n, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot render tenant alpha's node pool: %w", err)
	}
	return append(cluster, nodes...), nil
}

// checkRendered runs capmox's schema rules on a capmox object and
// admission's policies on every object, as the API server would on create.
func checkRendered(v *admission.Validator, o *unstructured.Unstructured) error {
	spec, err := json.Marshal(o.Object["spec"])
	if err != nil {
		return fmt.Errorf("cannot encode the spec: %w", err)
	}
	switch o.GetAPIVersion() + "/" + o.GetKind() {
	case pmv1alpha1.GroupVersion.String() + "/ProxmoxMachineTemplate":
		var t pmv1alpha1.ProxmoxMachineTemplateSpec
		if err := json.Unmarshal(spec, &t); err != nil {
			return fmt.Errorf("cannot decode the spec: %w", err)
		}
		err = capmoxrender.CheckMachineSpecV1alpha1(t.Template.Spec)
	case pmv1alpha1.GroupVersion.String() + "/ProxmoxCluster":
		var c pmv1alpha1.ProxmoxClusterSpec
		if err := json.Unmarshal(spec, &c); err != nil {
			return fmt.Errorf("cannot decode the spec: %w", err)
		}
		err = capmoxrender.CheckProxmoxClusterV1alpha1(c)
	}
	if err != nil {
		return err
	}
	body, err := json.Marshal(o.Object)
	if err != nil {
		return fmt.Errorf("cannot encode the object: %w", err)
	}
	gvk := o.GroupVersionKind()
	d, err := v.Review(admission.Request{Operation: "CREATE", Namespace: o.GetNamespace(), Object: body,
		Kind: metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}},
		&admission.Namespace{Name: o.GetNamespace()})
	if err != nil {
		return fmt.Errorf("cannot review the object: %w", err)
	}
	if !d.Allowed {
		return errors.New(d.Policy + ": " + d.Message)
	}
	return nil
}

// demoValidator is admission's validator for the demo's zone.
func demoValidator() (*admission.Validator, error) {
	cfg := admission.DefaultConfig()
	cfg.MachineBinding = true
	cfg.Zones = []admission.Zone{{Name: "zone-a", Bridge: "vmbr1"}}
	v, err := admission.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot build the admission validator: %w", err)
	}
	return v, nil
}
