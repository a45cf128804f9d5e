package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/luthermonson/go-proxmox"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

const (
	uuidA = "proxmox://6c9a3b2e-1f4d-4d6e-9a1b-2c3d4e5f6a7b"
	uuidB = "proxmox://0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
)

var topo = map[string]string{LabelRegion: "pve-eu1", LabelZone: "pve1"}

// The kinds of the management clusters of the gather tests.
var (
	machineV1beta1GVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"}
	machineGVK        = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
	pmGVK             = schema.GroupVersionKind{Group: capmox.Group, Version: "v1alpha2", Kind: capmox.KindProxmoxMachine}
	pmV1alpha1GVK     = schema.GroupVersionKind{Group: capmox.Group, Version: "v1alpha1", Kind: capmox.KindProxmoxMachine}
	pcGVK             = schema.GroupVersionKind{Group: capmox.Group, Version: "v1alpha1", Kind: capmox.KindProxmoxCluster}
	poolGVK           = schema.GroupVersionKind{Group: capmox.IPAMGroup, Version: "v1alpha2", Kind: capmox.KindInClusterIPPool}
	talosConfigGVK    = schema.GroupVersionKind{Group: "bootstrap.cluster.x-k8s.io", Version: "v1alpha3", Kind: "TalosConfig"}
	networkGVK        = schema.GroupVersionKind{Group: "proxmox.cozystack.io", Version: "v1alpha1", Kind: "ProxmoxNetwork"}
)

// snapshotOf is an empty snapshot of tenant-a/kubernetes-a with the IPAM
// provider installed: a healthy management cluster holding nothing yet.
func snapshotOf() *Snapshot {
	return &Snapshot{Target: Target{Namespace: "tenant-a", Cluster: "kubernetes-a", CAPIVersion: "v1beta2"}, Management: Management{IPAMServed: true}}
}

// machineOf is a Machine of tenant-a/kubernetes-a whose ProxmoxMachine is
// pm-<name>.
func machineOf(name string) Machine {
	return Machine{Name: name, Labels: map[string]string{capmox.LabelClusterName: "kubernetes-a"}, InfrastructureRef: "pm-" + name}
}

// codesOf lists the codes of findings; every finding must say its
// problem and its fix.
func codesOf(t *testing.T, fs []Finding) []string {
	t.Helper()
	var out []string
	for _, f := range fs {
		out = append(out, f.Code)
		if f.Problem == "" || f.Fix == "" {
			t.Errorf("finding %s lacks a problem or a fix", f.Code)
		}
	}
	return out
}

// management is a fake management cluster serving the core kinds and
// gvks (as unstructured), and holding objs.
func management(t *testing.T, gvks []schema.GroupVersionKind, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, k := range gvks {
		s.AddKnownTypeWithName(k, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(k.GroupVersion().WithKind(k.Kind+"List"), &unstructured.UnstructuredList{})
	}
	mapper := meta.NewDefaultRESTMapper(s.PreferredVersionAllGroups())
	for gvk := range s.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	return fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).Build()
}

// gather gathers tenant-a/<cluster> from mgmt and tenant (nil: none).
func gather(t *testing.T, mgmt client.WithWatch, tenant client.Reader, target Target) *Snapshot {
	t.Helper()
	s, err := Gather(context.Background(), Sources{Management: mgmt, Mapper: mgmt.RESTMapper(), Tenant: tenant}, target)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// counting counts the reads of mgmt by kind: "list Machine", "get
// ProxmoxMachine", ...
func counting(mgmt client.WithWatch, reads map[string]int) client.WithWatch {
	kind := func(c client.WithWatch, o runtime.Object) string {
		gvk, _ := c.GroupVersionKindFor(o)
		return strings.TrimSuffix(gvk.Kind, "List")
	}
	return interceptor.NewClient(mgmt, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads["get "+kind(c, obj)]++
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			reads["list "+kind(c, list)]++
			return c.List(ctx, list, opts...)
		},
	})
}

// object is an unstructured object of tenant-a.
func object(gvk schema.GroupVersionKind, name string, fields map[string]any) *unstructured.Unstructured {
	if fields == nil {
		fields = map[string]any{}
	}
	u := &unstructured.Unstructured{Object: fields}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("tenant-a")
	u.SetName(name)
	return u
}

// fakePVE answers the reads of the Proxmox checks from JSON: ha (""
// refuses it as PVE refuses a token without Sys.Audit on /), vms, nodes
// ("": none) and the configurations of VMs by path ("gone": destroyed).
type fakePVE struct {
	ha, vms, nodes string
	configs        map[string]string
}

func (f fakePVE) Get(_ context.Context, path string, v any) error {
	switch path {
	case "/cluster/ha/resources":
		if f.ha == "" {
			return proxmox.ErrNotAuthorized
		}
		return json.Unmarshal([]byte(f.ha), v)
	case "/cluster/resources?type=vm":
		return json.Unmarshal([]byte(f.vms), v)
	case "/cluster/resources?type=node":
		if f.nodes == "" {
			return json.Unmarshal([]byte("[]"), v)
		}
		return json.Unmarshal([]byte(f.nodes), v)
	}
	if conf, ok := f.configs[path]; ok {
		if conf == "gone" { // as PVE answers for a VM destroyed
			return errors.New("500 Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist")
		}
		return json.Unmarshal([]byte(conf), v)
	}
	return fmt.Errorf("unexpected GET %s", path)
}
