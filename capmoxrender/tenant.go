package capmoxrender

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// storageCapacityPatch turns CSIDriver.spec.storageCapacity off: nobody
// publishes capacity, and the scheduler would wait for it forever.
const storageCapacityPatch = "- op: replace\n  path: /spec/storageCapacity\n  value: false\n"

// TenantCSIValues are the values of the tenant-side CSI release: the node
// plugin only, no controller, no credentials, no capacity tracking.
func TenantCSIValues(classes []StorageClass) map[string]any {
	sc := make([]any, 0, len(classes))
	for _, c := range classes {
		m := map[string]any{"name": c.Name, "storage": c.Storage, "fstype": c.FSType, "reclaimPolicy": c.ReclaimPolicy}
		if c.SSD {
			m["ssd"] = true
		}
		sc = append(sc, m)
	}
	return map[string]any{
		"proxmox-csi-plugin": map[string]any{
			"config":       map[string]any{"clusters": []any{}},
			"replicaCount": int64(0),
			"options":      map[string]any{"enableCapacity": false},
			"storageClass": sc,
		},
	}
}

func tenantCSIRelease(p clusterPlan, o Options) (*unstructured.Unstructured, error) {
	spec := map[string]any{
		"interval":         "5m",
		"releaseName":      "proxmox-csi",
		"targetNamespace":  "kube-system",
		"storageNamespace": "kube-system",
		"install":          map[string]any{"createNamespace": false},
		"kubeConfig": map[string]any{"secretRef": map[string]any{
			"name": p.release + "-admin-kubeconfig", "key": TenantKubeconfigKey,
		}},
		"chart": map[string]any{"spec": map[string]any{
			"chart": o.CSIChart.Chart,
			"sourceRef": map[string]any{
				"kind": o.CSIChart.SourceKind, "name": o.CSIChart.SourceName, "namespace": o.CSIChart.SourceNamespace,
			},
		}},
		"values": TenantCSIValues(p.storageClasses),
		"postRenderers": []any{map[string]any{"kustomize": map[string]any{"patches": []any{
			map[string]any{"target": map[string]any{"kind": "CSIDriver"}, "patch": storageCapacityPatch},
		}}}},
	}
	return object(FluxHelmAPIVersion, "HelmRelease", p.ns, p.release+"-csi-proxmox", nil, spec)
}
