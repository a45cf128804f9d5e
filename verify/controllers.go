package verify

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Finding codes of the management-side controllers and the IP pool.
const (
	CodeControllerNotReady = "ControllerNotReady"
	CodeIPPoolExhausted    = "IPPoolExhausted"
)

// checkControllers looks at the cluster's CCM and CSI controller
// Deployments (<cluster>-pccm, <cluster>-pcsi-controller) in the management
// cluster (a missing one is not judged here: the Node rows name what its
// absence causes), and at the InClusterIPPool capmox made from ipv4Config
// (<cluster>-v4-icip): a CCM that is not running leaves every worker
// tainted, a CSI controller that is not running binds no PVC, and a pool
// without a free address leaves new Machines waiting.
func checkControllers(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace, cluster string) ([]ManagementFinding, error) {
	var out []ManagementFinding
	for _, d := range []struct{ name, what string }{{cluster + "-pccm", "cloud-controller-manager"}, {cluster + "-pcsi-controller", "CSI controller"}} {
		dep := &unstructured.Unstructured{}
		dep.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		err := mgmt.Get(ctx, client.ObjectKey{Namespace: namespace, Name: d.name}, dep)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("cannot read Deployment %s/%s: %w", namespace, d.name, err)
		}
		want, found, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		if !found {
			want = 1
		}
		ready, _, _ := unstructured.NestedInt64(dep.Object, "status", "availableReplicas")
		if want > 0 && ready < want {
			out = append(out, ManagementFinding{Code: CodeControllerNotReady,
				Problem: fmt.Sprintf("the %s Deployment %s/%s has %d of %d replicas available", d.what, namespace, d.name, ready, want),
				Fix:     fmt.Sprintf("kubectl -n %s logs deploy/%s -c %s, then the main container: a missing credentials key or a token that cannot read the VMs shows there", namespace, d.name, "build-cloud-config")})
		}
	}
	pool, err := getServed(ctx, mgmt, mapper, schema.GroupKind{Group: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool"}, ipamVersions, namespace, cluster+"-v4-icip")
	if err != nil || pool == nil {
		return out, err
	}
	free, found, _ := unstructured.NestedInt64(pool.Object, "status", "ipAddresses", "free")
	if found && free == 0 {
		out = append(out, ManagementFinding{Code: CodeIPPoolExhausted,
			Problem: fmt.Sprintf("InClusterIPPool %s/%s has no free address: new Machines wait for an IPAddressClaim", namespace, pool.GetName()),
			Fix:     "add addresses to proxmox.ipv4Config.addresses of the Kubernetes object and render the cluster again, or lower the pools' maxReplicas"})
	}
	return out, nil
}
