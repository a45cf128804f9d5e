package cli

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
	var tenant, mgmt []client.Object
	for _, n := range nodes {
		tenant = append(tenant, n)
	}
	for _, m := range machines {
		mgmt = append(mgmt, m)
	}
	withVerifyObjects(t, ipam, tenant, mgmt)
}

// withVerifyObjects points the verify command at a fake tenant cluster
// holding tenant and a fake management cluster holding mgmt.
func withVerifyObjects(t *testing.T, ipam bool, tenant, mgmt []client.Object) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	tb := fake.NewClientBuilder().WithScheme(s).WithObjects(tenant...)
	ms := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(ms); err != nil {
		t.Fatal(err)
	}
	if ipam {
		gvk := schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1alpha2", Kind: "InClusterIPPool"}
		ms.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		ms.AddKnownTypeWithName(gvk.GroupVersion().WithKind("InClusterIPPoolList"), &unstructured.UnstructuredList{})
	}
	// The management cluster serves ProxmoxNetwork, as a Cozystack with
	// the controller does.
	netGVK := schema.GroupVersionKind{Group: "proxmox.cozystack.io", Version: "v1alpha1", Kind: "ProxmoxNetwork"}
	ms.AddKnownTypeWithName(netGVK, &unstructured.Unstructured{})
	ms.AddKnownTypeWithName(netGVK.GroupVersion().WithKind("ProxmoxNetworkList"), &unstructured.UnstructuredList{})
	// And Cluster API's Machines, which pool HA's checks list.
	machineGVK := schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
	ms.AddKnownTypeWithName(machineGVK, &unstructured.Unstructured{})
	ms.AddKnownTypeWithName(machineGVK.GroupVersion().WithKind("MachineList"), &unstructured.UnstructuredList{})
	// And capmox's ProxmoxMachines, which the worker VM check lists.
	pmGVK := schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha2", Kind: "ProxmoxMachine"}
	ms.AddKnownTypeWithName(pmGVK, &unstructured.Unstructured{})
	ms.AddKnownTypeWithName(pmGVK.GroupVersion().WithKind("ProxmoxMachineList"), &unstructured.UnstructuredList{})
	mapper := meta.NewDefaultRESTMapper(ms.PreferredVersionAllGroups())
	for gvk := range ms.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	mb := fake.NewClientBuilder().WithScheme(ms).WithRESTMapper(mapper).WithObjects(mgmt...)
	old := verifyClients
	verifyClients = func(*rest.Config, *rest.Config) (client.Client, client.Reader, error) {
		return mb.Build(), tb.Build(), nil
	}
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
	return verifyMachineIn("tenant-a", "kubernetes-prod", "v1beta2", name, pid, node)
}

// verifyMachineIn is a Machine of cluster in namespace ns, served as
// cluster.x-k8s.io/<version>.
func verifyMachineIn(ns, cluster, version, name, pid, node string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/" + version, "kind": "Machine",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"cluster.x-k8s.io/cluster-name": cluster}},
		"spec":     map[string]any{"clusterName": cluster, "providerID": pid},
		"status": map[string]any{"nodeRef": map[string]any{"name": node}, "phase": "Running",
			"addresses": []any{map[string]any{"type": "Hostname", "address": node}, map[string]any{"type": "InternalIP", "address": "10.0.0.11"}}},
	}}
}

// writeKubeconfig writes a kubeconfig with one context per server (named
// after the key) and the first name as current context, and returns its path.
func writeKubeconfig(t *testing.T, current string, servers map[string]string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for name, server := range servers {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "t-" + name}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "ns-" + name}
	}
	cfg.CurrentContext = current
	path := filepath.Join(t.TempDir(), current+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// verifyArgs points KUBECONFIG at a management kubeconfig and returns
// verify's arguments with a tenant kubeconfig.
func verifyArgs(t *testing.T) []string {
	t.Helper()
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "mgmt", map[string]string{"mgmt": "https://mgmt.example:6443"}))
	tenant := writeKubeconfig(t, "tenant", map[string]string{"tenant": "https://tenant.example:6443"})
	return []string{"verify", "--tenant-kubeconfig", tenant, "-n", "tenant-a", "--cluster", "prod", "--capi-version", "v1beta2"}
}

func TestVerify(t *testing.T) {
	args := verifyArgs(t)
	t.Run("Healthy", func(t *testing.T) {
		withVerifyClients(t, []*corev1.Node{verifyNode("w1", verifyUUID1, true)}, []*unstructured.Unstructured{verifyMachine("m1", verifyUUID1, "w1")})
		out, errOut, code := renderCLI(t, "", args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		want := "NODE  MACHINE  VM  ADDRESS    STATE    PROVIDERID                                      REGION   ZONE  STATUS\n" +
			"w1    m1       -   10.0.0.11  Running  " + verifyUUID1 + "  pve-eu1  pve1  ok\n"
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("table (-want +got):\n%s", diff)
		}
	})
	t.Run("Failures", func(t *testing.T) {
		withVerifyClients(t,
			[]*corev1.Node{verifyNode("w1", verifyUUID1, true), verifyNode("w2", "proxmox://pve-eu1/119", false)},
			[]*unstructured.Unstructured{verifyMachine("m1", verifyUUID1, "w1"), verifyMachine("m2", verifyUUID2, "w2")})
		out, errOut, code := renderCLI(t, "", append(args, "-o", "json")...)
		if code != 1 || !strings.Contains(errOut, "see the fix of each failed row") {
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
		if code != 2 || !strings.Contains(errOut, "/nonexistent/k") {
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

	args := verifyArgs(t)
	withVerifyClusters(t, true, nodes, machines)
	_, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("control: a healthy management cluster must pass, exit %d: %s", code, errOut)
	}

	// A gateway group that cannot fail over is a warning: named with its
	// fix, but the workers are fine, so verify passes.
	noFailover := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "proxmox.cozystack.io/v1alpha1", "kind": "ProxmoxNetwork",
		"metadata": map[string]any{"name": "net1", "namespace": "tenant-a"},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "GatewayFailover", "status": "False", "reason": "NoFailover",
			"message": "the gateway group has 2 chassis", "lastTransitionTime": "2026-01-01T00:00:00Z"}}},
	}}
	withVerifyObjects(t, true, []client.Object{nodes[0]}, []client.Object{machines[0], noFailover})
	_, errOut, code = run(t, args...)
	if code != 0 || !strings.Contains(errOut, "Warning: GatewayNoFailover: ProxmoxNetwork tenant-a/net1") || !strings.Contains(errOut, "third node a trunk node") {
		t.Fatalf("a network without failover must be warned of with its fix and pass, exit %d: %s", code, errOut)
	}

	withVerifyClusters(t, false, nodes, machines)
	_, errOut, code = run(t, args...)
	if code != 1 || !strings.Contains(errOut, "IPAMProviderMissing") || !strings.Contains(errOut, "cozystack.capi-provider-ipam-in-cluster") {
		t.Fatalf("no IPAM provider must fail with what to install, exit %d: %s", code, errOut)
	}
}

// TestVerifyKubeconfigLookup checks that verify finds the management
// cluster as kubectl does: --kubeconfig, else KUBECONFIG, else
// ~/.kube/config; --context picks a context and -n defaults to the
// context's namespace. The tenant cluster comes from its own file and
// --tenant-context.
func TestVerifyKubeconfigLookup(t *testing.T) {
	servers := map[string]string{"mgmt": "https://mgmt.example:6443", "other": "https://other.example:6443"}
	tenant := writeKubeconfig(t, "tenant", map[string]string{"tenant": "https://tenant.example:6443", "spare": "https://spare.example:6443"})
	explicit := writeKubeconfig(t, "other", map[string]string{"other": "https://explicit.example:6443"})
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(writeKubeconfig(t, "mgmt", servers))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		env       string
		args      []string
		mgmt, tnt string
		namespace string
	}{
		"HomeConfig":    {mgmt: "https://mgmt.example:6443", tnt: "https://tenant.example:6443", namespace: "ns-mgmt"},
		"Context":       {args: []string{"--context", "other"}, mgmt: "https://other.example:6443", tnt: "https://tenant.example:6443", namespace: "ns-other"},
		"Namespace":     {args: []string{"-n", "tenant-a"}, mgmt: "https://mgmt.example:6443", tnt: "https://tenant.example:6443", namespace: "tenant-a"},
		"KUBECONFIG":    {env: explicit, mgmt: "https://explicit.example:6443", tnt: "https://tenant.example:6443", namespace: "ns-other"},
		"FlagOverEnv":   {env: explicit, args: []string{"--kubeconfig", filepath.Join(home, ".kube", "config")}, mgmt: "https://mgmt.example:6443", tnt: "https://tenant.example:6443", namespace: "ns-mgmt"},
		"TenantContext": {args: []string{"--tenant-context", "spare"}, mgmt: "https://mgmt.example:6443", tnt: "https://spare.example:6443", namespace: "ns-mgmt"},
	}
	// client-go reads HOME once, when the process starts, as kubectl does;
	// point its home file at this test's HOME for the cases.
	oldHome := clientcmd.RecommendedHomeFile
	clientcmd.RecommendedHomeFile = filepath.Join(home, ".kube", "config")
	t.Cleanup(func() { clientcmd.RecommendedHomeFile = oldHome })
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			var gotM, gotT string
			withVerifyClients(t, []*corev1.Node{verifyNode("w1", verifyUUID1, true)}, []*unstructured.Unstructured{verifyMachine("m1", verifyUUID1, "w1")})
			built := verifyClients
			verifyClients = func(m, tn *rest.Config) (client.Client, client.Reader, error) {
				gotM, gotT = m.Host, tn.Host
				return built(m, tn)
			}
			args := append([]string{"verify", "--tenant-kubeconfig", tenant, "--cluster", "prod", "--capi-version", "v1beta2", "-o", "json"}, tc.args...)
			out, errOut, code := run(t, args...)
			if gotM != tc.mgmt || gotT != tc.tnt {
				t.Fatalf("management %q, tenant %q; want %q and %q (exit %d: %s)", gotM, gotT, tc.mgmt, tc.tnt, code, errOut)
			}
			// The fake machines live in tenant-a: another namespace finds none.
			found := strings.Contains(out, `"machine": "m1"`)
			if found != (tc.namespace == "tenant-a") {
				t.Errorf("namespace %s: found m1 = %v; output %s", tc.namespace, found, out)
			}
		})
	}
}

// TestVerifyTenantFindings runs verify on a cluster whose CCM and CSI
// controller run in the management cluster: a Node whose CSI node plugin
// Pod is not ready, or whose region is not the CCM's, fails its row with
// the code and the command; a control where both hold passes.
func TestVerifyTenantFindings(t *testing.T) {
	args := verifyArgs(t)
	sel := map[string]string{"app.kubernetes.io/name": "proxmox-csi-plugin", "app.kubernetes.io/component": "node"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "proxmox-csi-proxmox-csi-plugin-node", Namespace: "kube-system", Labels: map[string]string{"app.kubernetes.io/name": "proxmox-csi-plugin"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	csiPod := func(node string, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "csi-node-" + node, Namespace: "kube-system", Labels: sel}, Spec: corev1.PodSpec{NodeName: node}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	deploy := func(name, secret string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant-a"}, Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}
		d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "proxmox-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}
		return d
	}
	mgmt := []client.Object{
		verifyMachine("m1", verifyUUID1, "w1"), verifyMachine("m2", verifyUUID2, "w2"),
		deploy("kubernetes-prod-pccm", "ccm"), deploy("kubernetes-prod-pcsi-controller", "csi"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ccm", Namespace: "tenant-a"}, Data: map[string][]byte{"region": []byte("pve-eu1")}},
	}
	w2 := verifyNode("w2", verifyUUID2, true)
	t.Run("Control", func(t *testing.T) {
		withVerifyObjects(t, true, []client.Object{verifyNode("w1", verifyUUID1, true), w2, ds, csiPod("w1", true), csiPod("w2", true)}, mgmt)
		if out, errOut, code := run(t, args...); code != 0 {
			t.Fatalf("region and CSI node Pods as expected must pass, exit %d:\n%s%s", code, out, errOut)
		}
	})
	t.Run("CSINodeNotReady", func(t *testing.T) {
		withVerifyObjects(t, true, []client.Object{verifyNode("w1", verifyUUID1, true), w2, ds, csiPod("w1", true), csiPod("w2", false)}, mgmt)
		out, errOut, code := run(t, append(args, "-o", "wide")...)
		if code != 1 || !strings.Contains(out, "CSINodeNotReady: CSI node plugin Pod kube-system/csi-node-w2 is not ready") ||
			!strings.Contains(out, "-n kube-system logs csi-node-w2 --all-containers") {
			t.Fatalf("w2 without a ready CSI node Pod must fail its row with the command, exit %d:\n%s%s", code, out, errOut)
		}
	})
	t.Run("RegionMismatch", func(t *testing.T) {
		other := verifyNode("w2", verifyUUID2, true)
		other.Labels["topology.kubernetes.io/region"] = "pve-us1"
		withVerifyObjects(t, true, []client.Object{verifyNode("w1", verifyUUID1, true), other, ds, csiPod("w1", true), csiPod("w2", true)}, mgmt)
		out, errOut, code := run(t, append(args, "-o", "wide")...)
		if code != 1 || !strings.Contains(out, "RegionMismatch: region label pve-us1, but the CCM's credentials (Secret tenant-a/ccm) say region pve-eu1") {
			t.Fatalf("w2 in another region must fail its row, exit %d:\n%s%s", code, out, errOut)
		}
	})
}

// TestVerifyHelpNamesEveryCode checks that verify's help and
// docs/capmoxrender.md name every finding code package verify declares.
func TestVerifyHelpNamesEveryCode(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(repoRoot, "verify", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok && strings.HasPrefix(vs.Names[0].Name, "Code") {
				codes = append(codes, strings.Trim(vs.Values[0].(*ast.BasicLit).Value, `"`))
			}
			return true
		})
	}
	if len(codes) < 20 {
		t.Fatalf("found only %d codes: %v", len(codes), codes)
	}
	help, _, _ := run(t, "verify", "--help")
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "capmoxrender.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range codes {
		if !strings.Contains(help, c) {
			t.Errorf("verify --help does not name %s", c)
		}
		if !strings.Contains(string(doc), "`"+c+"`") {
			t.Errorf("docs/capmoxrender.md does not name `%s`", c)
		}
	}
}

// TestVerifyHAResources: with a token that reads the HA resources, an HA
// resource the controller made for a Machine that is gone fails verify
// with its fix; one whose Machine is there, another namespace's and an
// operator's own are no finding (the control).
func TestVerifyHAResources(t *testing.T) {
	srv := pvefake.NewServer(t, pvefake.WithTLS())
	for id := 101; id <= 104; id++ {
		if err := srv.AddVM(pvefake.VMSpec{VMID: id, Running: true}); err != nil {
			t.Fatal(err)
		}
	}
	root := srv.Client()
	add := func(sid, comment string) {
		t.Helper()
		if err := root.Post(context.Background(), "/cluster/ha/resources", map[string]string{"sid": sid, "comment": comment}, nil); err != nil {
			t.Fatal(err)
		}
	}
	add("vm:101", "pxsubstrate machine tenant-a/m1")
	add("vm:102", "pxsubstrate machine tenant-b/m9")
	add("vm:103", "")
	dir := t.TempDir()
	ca, sec := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "token")
	if err := os.WriteFile(ca, srv.CertificatePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sec, []byte(srv.RootSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := []*corev1.Node{verifyNode("w1", verifyUUID1, true)}
	machines := []*unstructured.Unstructured{verifyMachine("m1", verifyUUID1, "w1")}
	args := append(verifyArgs(t), "--proxmox-url", strings.TrimSuffix(srv.URL, "/api2/json"), "--proxmox-token-id", srv.RootTokenID,
		"--proxmox-token-secret-file", sec, "--proxmox-ca-file", ca)
	withVerifyClusters(t, true, nodes, machines)
	if _, errOut, code := run(t, args...); code != 0 {
		t.Fatalf("control: HA resources of live Machines must pass, exit %d: %s", code, errOut)
	}
	add("vm:104", "pxsubstrate machine tenant-a/m-gone")
	withVerifyClusters(t, true, nodes, machines)
	_, errOut, code := run(t, args...)
	if code != 1 || !strings.Contains(errOut, "Error: HAResourceWithoutMachine: HA resource vm:104 was made for Machine tenant-a/m-gone, which is gone") ||
		!strings.Contains(errOut, "pvesh delete /cluster/ha/resources/vm:104") || strings.Contains(errOut, "vm:101") || strings.Contains(errOut, "vm:102") {
		t.Fatalf("an HA resource without its Machine must fail with its fix, exit %d: %s", code, errOut)
	}
	withVerifyClusters(t, true, nodes, machines)
	_, errOut, code = run(t, append(verifyArgs(t), "--proxmox-url", srv.URL)...)
	if code != 2 || !strings.Contains(errOut, "the Proxmox checks need --proxmox-token-id and --proxmox-token-secret-file too") {
		t.Fatalf("--proxmox-url alone must be a usage error naming the missing flags, exit %d: %s", code, errOut)
	}
}

// TestVerifyWorkerVMs: with the tenant's token (VM.Audit through its pool)
// verify reads the pool's VMs: the VM a ProxmoxMachine records passes
// (and the HA resources the token may not read are a warning, not a
// pass); a second VM named after that ProxmoxMachine fails with
// DuplicateWorkerVM, the commands that remove it and what pool healing
// does about it; a token that sees no
// VM of the pool gets PoolNotVisible.
func TestVerifyWorkerVMs(t *testing.T) {
	srv := pvefake.NewServer(t, pvefake.WithTLS())
	for _, vm := range []pvefake.VMSpec{{VMID: 101, Name: "m1"}, {VMID: 300, Name: "m1"}} {
		if err := srv.AddVM(vm); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.AddPool("tenant-a", "", []int{101}, nil); err != nil {
		t.Fatal(err)
	}
	token := func(user string, path string, role string) string {
		t.Helper()
		if err := srv.AddUser(user, pvefake.UserSpec{}); err != nil {
			t.Fatal(err)
		}
		secret, err := srv.AddToken(user, "tk", pvefake.TokenSpec{})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.SetACL(path, "user", user, true, role); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	tenantToken := token("capmox@pve", "/pool/tenant-a", "PVEAuditor")
	if err := srv.AddRole("CozyHA", "Sys.Audit", "Sys.Console"); err != nil {
		t.Fatal(err)
	}
	haToken := token("ha@pve", "/", "CozyHA")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CertificatePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	pm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha2", "kind": "ProxmoxMachine",
		"metadata": map[string]any{"name": "m1", "namespace": "tenant-a"},
		"spec":     map[string]any{"pool": "tenant-a", "virtualMachineID": int64(101)},
	}}
	nodes := []*corev1.Node{verifyNode("w1", verifyUUID1, true)}
	verify := func(tokenID, secretFile string) (string, int) {
		t.Helper()
		withVerifyClusters(t, true, nodes, []*unstructured.Unstructured{verifyMachine("m1", verifyUUID1, "w1"), pm})
		_, errOut, code := run(t, append(verifyArgs(t), "--proxmox-url", strings.TrimSuffix(srv.URL, "/api2/json"), "--proxmox-token-id", tokenID,
			"--proxmox-token-secret-file", secretFile, "--proxmox-ca-file", ca)...)
		return errOut, code
	}
	errOut, code := verify("capmox@pve!tk", tenantToken)
	if code != 0 || strings.Contains(errOut, "DuplicateWorkerVM") || strings.Contains(errOut, "WorkerVMWithoutMachine") ||
		!strings.Contains(errOut, "Warning: HAResourcesNotVisible: token capmox@pve!tk may not read the HA resources") {
		t.Fatalf("control: the VM the ProxmoxMachine records must pass, the unread HA resources warned of, exit %d: %s", code, errOut)
	}
	if err := srv.AddVM(pvefake.VMSpec{VMID: 100, Name: "m1", Pool: "tenant-a"}); err != nil {
		t.Fatal(err)
	}
	errOut, code = verify("capmox@pve!tk", tenantToken)
	if code != 1 || !strings.Contains(errOut, "Error: DuplicateWorkerVM: VM 100 on pve in pool tenant-a is named after ProxmoxMachine tenant-a/m1, which records VM 101") ||
		!strings.Contains(errOut, "pvesh delete /nodes/pve/qemu/100 --purge 1 --destroy-unreferenced-disks 1") || strings.Contains(errOut, "VM 300") ||
		!strings.Contains(errOut, "\n  healing: no pool healing: Machine m1 belongs to no MachineDeployment") {
		t.Fatalf("a second clone of m1 must fail with its fix, and VM 300 outside the pool must not count, exit %d: %s", code, errOut)
	}
	errOut, code = verify("ha@pve!tk", haToken)
	if code != 0 || !strings.Contains(errOut, "Warning: PoolNotVisible: the token sees no VM of pool tenant-a") || strings.Contains(errOut, "HAResourcesNotVisible") {
		t.Fatalf("the pool HA token reads the HA resources and must be told it sees no VM of the pool, exit %d: %s", code, errOut)
	}
}
