package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const (
	verifyUUID1 = "proxmox://6c9a3b2e-1f4d-4d6e-9a1b-2c3d4e5f6a7b"
	verifyUUID2 = "proxmox://0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
)

// withVerifyClients points the verify command at fake clusters for one test.
// The management cluster serves the IPAM provider's InClusterIPPool.
func withVerifyClients(t *testing.T, nodes []*corev1.Node, machines []*unstructured.Unstructured) {
	t.Helper()
	withVerifyClusters(t, true, nodes, machines)
}

func withVerifyClusters(t *testing.T, ipam bool, nodes []*corev1.Node, machines []*unstructured.Unstructured) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	tb := fake.NewClientBuilder().WithScheme(s)
	for _, n := range nodes {
		tb = tb.WithObjects(n)
	}
	ms := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(ms); err != nil {
		t.Fatal(err)
	}
	if ipam {
		gvk := schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1alpha2", Kind: "InClusterIPPool"}
		ms.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		ms.AddKnownTypeWithName(gvk.GroupVersion().WithKind("InClusterIPPoolList"), &unstructured.UnstructuredList{})
	}
	mapper := meta.NewDefaultRESTMapper(ms.PreferredVersionAllGroups())
	for gvk := range ms.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	mb := fake.NewClientBuilder().WithScheme(ms).WithRESTMapper(mapper)
	for _, m := range machines {
		mb = mb.WithObjects(m)
	}
	old := verifyClients
	verifyClients = func(string, string) (client.Client, client.Reader, error) { return mb.Build(), tb.Build(), nil }
	t.Cleanup(func() { verifyClients = old })
}

func verifyNode(name, pid string, ready bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: pid}}
	if ready {
		n.Labels = map[string]string{"topology.kubernetes.io/region": "pve-eu1", "topology.kubernetes.io/zone": "pve1"}
	} else {
		n.Spec.Taints = []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

func verifyMachine(name, pid, node string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
		"metadata": map[string]any{"name": name, "namespace": "tenant-a", "labels": map[string]any{"cluster.x-k8s.io/cluster-name": "kubernetes-prod"}},
		"spec":     map[string]any{"clusterName": "kubernetes-prod", "providerID": pid},
		"status":   map[string]any{"nodeRef": map[string]any{"name": node}},
	}}
}

func TestVerify(t *testing.T) {
	args := []string{"verify", "--tenant-kubeconfig", "t", "-n", "tenant-a", "--cluster", "prod", "--capi-version", "v1beta2"}
	t.Run("Healthy", func(t *testing.T) {
		withVerifyClients(t, []*corev1.Node{verifyNode("w1", verifyUUID1, true)}, []*unstructured.Unstructured{verifyMachine("m1", verifyUUID1, "w1")})
		out, errOut, code := renderCLI(t, "", args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		want := "NODE  MACHINE  VM  PROVIDERID                                      REGION   ZONE  STATUS  FIX\nw1    m1       -   " + verifyUUID1 + "  pve-eu1  pve1  ok      -\n"
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("table (-want +got):\n%s", diff)
		}
	})
	t.Run("Failures", func(t *testing.T) {
		withVerifyClients(t,
			[]*corev1.Node{verifyNode("w1", verifyUUID1, true), verifyNode("w2", "proxmox://pve-eu1/119", false)},
			[]*unstructured.Unstructured{verifyMachine("m1", verifyUUID1, "w1"), verifyMachine("m2", verifyUUID2, "w2")})
		out, errOut, code := renderCLI(t, "", append(args, "-o", "json")...)
		if code != 1 || !strings.Contains(errOut, "see the FIX column") {
			t.Fatalf("exit %d, stderr %q: a failing row must exit 1", code, errOut)
		}
		var rows []struct {
			Node, Machine string
			OK            bool
			Fixes         []string
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || !rows[0].OK || rows[1].OK || rows[1].Machine != "m2" {
			t.Fatalf("want w1 ok and w2 failing against m2, got %+v", rows)
		}
		if !strings.Contains(strings.Join(rows[1].Fixes, " "), "features.provider: capmox") {
			t.Errorf("the default-form providerID must point at features.provider: capmox, got %v", rows[1].Fixes)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		withVerifyClients(t, nil, nil)
		_, errOut, code := renderCLI(t, "", args...)
		if code != 1 || !strings.Contains(errOut, "nothing was verified") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("BadKubeconfig", func(t *testing.T) {
		_, errOut, code := renderCLI(t, "", "verify", "--kubeconfig", "/nonexistent/k", "--tenant-kubeconfig", "/nonexistent/t", "-n", "a", "--cluster", "b")
		if code != 1 || !strings.Contains(errOut, "cannot load kubeconfig") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("BadCAPIVersion", func(t *testing.T) {
		_, _, code := renderCLI(t, "", append(args[:len(args)-1], "v1alpha4")...)
		if code != 2 {
			t.Fatalf("exit %d, want 2", code)
		}
	})
}

func TestVerifyManagementFindings(t *testing.T) {
	nodes := []*corev1.Node{verifyNode("w1", verifyUUID1, true)}
	machines := []*unstructured.Unstructured{verifyMachine("m1", verifyUUID1, "w1")}

	args := []string{"verify", "--tenant-kubeconfig", "t", "-n", "tenant-a", "--cluster", "prod", "--capi-version", "v1beta2"}
	withVerifyClusters(t, true, nodes, machines)
	_, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("control: a healthy management cluster must pass, exit %d: %s", code, errOut)
	}

	withVerifyClusters(t, false, nodes, machines)
	_, errOut, code = run(t, args...)
	if code != 1 || !strings.Contains(errOut, "IPAMProviderMissing") || !strings.Contains(errOut, "cozystack.capi-provider-ipam-in-cluster") {
		t.Fatalf("no IPAM provider must fail with what to install, exit %d: %s", code, errOut)
	}
}
