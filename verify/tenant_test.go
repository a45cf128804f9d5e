package verify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/verify"
)

// codes lists each row as node:code|code.
func codes(rows []verify.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Node+":"+strings.Join(r.Codes, "|"))
	}
	return out
}

func TestJudgeWithExpect(t *testing.T) {
	healthy := func(name, pid string) verify.Node {
		return verify.Node{Name: name, ProviderID: pid, Labels: topo}
	}
	machines := []verify.Machine{{Name: "m1", ProviderID: uuidA, NodeRef: "w1"}, {Name: "m2", ProviderID: uuidB, NodeRef: "w2"}}
	ready := []verify.CSINodePod{{Name: "csi-node-a", Ready: true}}
	cases := map[string]struct {
		reason string
		nodes  []verify.Node
		expect verify.Expect
		want   []string
	}{
		"NothingExpected": {reason: "without a CCM region or CSI driver nothing more is checked",
			nodes: []verify.Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			want:  []string{"w1:", "w2:"}},
		"RegionAndCSIMet": {reason: "the CCM's region and a ready CSI node Pod on each Node",
			nodes:  []verify.Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			expect: verify.Expect{Region: "pve-eu1", CSINodes: map[string][]verify.CSINodePod{"w1": ready, "w2": {{Name: "old"}, {Name: "new", Ready: true}}}, CSIDaemonSets: []string{"ds"}},
			want:   []string{"w1:", "w2:"}},
		"RegionMismatch": {reason: "a region label the CCM's credentials do not name",
			nodes:  []verify.Node{healthy("w1", uuidA), {Name: "w2", ProviderID: uuidB, Labels: map[string]string{verify.LabelRegion: "pve-old", verify.LabelZone: "pve1"}}},
			expect: verify.Expect{Region: "pve-eu1", RegionSource: "Secret tenant-a/ccm"},
			want:   []string{"w1:", "w2:" + verify.CodeRegionMismatch}},
		"NoTopology": {reason: "missing labels are the pitfall that stops the CSI node plugin",
			nodes:  []verify.Node{healthy("w1", uuidA), {Name: "w2", ProviderID: uuidB}},
			expect: verify.Expect{Region: "pve-eu1"},
			want:   []string{"w1:", "w2:" + verify.CodeNoTopologyLabels + "|" + verify.CodeNoTopologyLabels}},
		"CSIPodNotReady": {reason: "a Node whose CSI node Pod is not ready",
			nodes:  []verify.Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			expect: verify.Expect{CSINodes: map[string][]verify.CSINodePod{"w1": ready, "w2": {{Name: "csi-node-b", Reason: "CrashLoopBackOff"}}}, CSIDaemonSets: []string{"ds"}},
			want:   []string{"w1:", "w2:" + verify.CodeCSINodeNotReady}},
		"CSIPodMissing": {reason: "a Node the DaemonSet has no Pod on",
			nodes:  []verify.Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			expect: verify.Expect{CSINodes: map[string][]verify.CSINodePod{"w1": ready}, CSIDaemonSets: []string{"ds"}},
			want:   []string{"w1:", "w2:" + verify.CodeCSINodeNotReady}},
		"CSINoDaemonSet": {reason: "a CSI controller without a node plugin in the tenant fails every Node",
			nodes:  []verify.Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			expect: verify.Expect{CSINodes: map[string][]verify.CSINodePod{}},
			want:   []string{"w1:" + verify.CodeCSINodeNotReady, "w2:" + verify.CodeCSINodeNotReady}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rows := verify.JudgeWith(tc.nodes, machines, tc.expect)
			if diff := cmp.Diff(tc.want, codes(rows)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			for _, r := range rows {
				if len(r.Codes) != len(r.Problems) || len(r.Fixes) != len(r.Problems) {
					t.Errorf("every problem needs a code and a fix: %+v", r)
				}
				if r.OK != (len(r.Problems) == 0) {
					t.Errorf("row %s: OK %t with problems %v", r.Node, r.OK, r.Problems)
				}
			}
		})
	}
}

// TestCollectTenantExpectations runs Collect against a management cluster
// running the CCM (its credentials Secret naming region pve-eu1) and the
// CSI controller, and a tenant whose CSI node plugin is ready on w1 only.
func TestCollectTenantExpectations(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	node := func(name, pid, region string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{verify.LabelRegion: region, verify.LabelZone: "pve1"}}, Spec: corev1.NodeSpec{ProviderID: pid}}
	}
	sel := map[string]string{"app.kubernetes.io/name": "proxmox-csi-plugin", "app.kubernetes.io/component": "node"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "proxmox-csi-proxmox-csi-plugin-node", Namespace: "kube-system", Labels: map[string]string{verify.LabelCSIName: verify.CSIPluginName}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	pod := func(name, node string, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: sel}, Spec: corev1.PodSpec{NodeName: node}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		} else {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
		}
		return p
	}
	stray := pod("other-app", "w2", true)
	stray.Labels = map[string]string{"app": "other"}
	tenant := fake.NewClientBuilder().WithScheme(s).WithObjects(
		node("w1", uuidA, "pve-eu1"), node("w2", uuidB, "pve-old"), ds,
		pod("csi-node-1", "w1", true), pod("csi-node-2", "w2", false), stray,
	).Build()

	deploy := func(name, secret string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant-a"}}
		d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "proxmox-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}
		return d
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ccm-creds", Namespace: "tenant-a"},
		Data: map[string][]byte{"region": []byte("pve-eu1\n"), "token_secret": []byte("never-shown")}}
	machines := []client.Object{verifyMachineObj("m1", uuidA, "w1"), verifyMachineObj("m2", uuidB, "w2")}
	target := verify.Target{Namespace: "tenant-a", Cluster: "kubernetes-prod", CAPIVersion: "v1beta1", TenantKubeconfig: "tenant.kubeconfig"}

	t.Run("ControllersRunning", func(t *testing.T) {
		mgmt := fake.NewClientBuilder().WithScheme(s).WithObjects(append(machines, secret,
			deploy("kubernetes-prod-pccm", "ccm-creds"), deploy("kubernetes-prod-pcsi-controller", "csi-creds"))...).Build()
		rows, err := verify.Collect(context.Background(), mgmt, tenant, target)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"w1:", "w2:" + verify.CodeRegionMismatch + "|" + verify.CodeCSINodeNotReady}
		if diff := cmp.Diff(want, codes(rows)); diff != "" {
			t.Fatalf("w2 has the old region and a crash-looping CSI node Pod (-want +got):\n%s", diff)
		}
		all := strings.Join(append(rows[1].Problems, rows[1].Fixes...), "\n")
		for _, s := range []string{"CrashLoopBackOff", "kubectl --kubeconfig tenant.kubeconfig -n kube-system logs csi-node-2 --all-containers", "Secret tenant-a/ccm-creds", "kubectl -n tenant-a delete machine m2"} {
			if !strings.Contains(all, s) {
				t.Errorf("w2's problems and fixes lack %q:\n%s", s, all)
			}
		}
		if strings.Contains(all, "never-shown") {
			t.Error("a credential value reached a message")
		}
	})
	t.Run("NoControllers", func(t *testing.T) {
		mgmt := fake.NewClientBuilder().WithScheme(s).WithObjects(machines...).Build()
		rows, err := verify.Collect(context.Background(), mgmt, tenant, target)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"w1:", "w2:"}, codes(rows)); diff != "" {
			t.Errorf("without the CCM and CSI Deployments neither region nor CSI Pods are judged (-want +got):\n%s", diff)
		}
	})
}

// verifyMachineObj is a v1beta1 Machine of tenant-a/kubernetes-prod paired
// with node.
func verifyMachineObj(name, pid, node string) client.Object {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
		"metadata": map[string]any{"name": name, "namespace": "tenant-a", "labels": map[string]any{verify.LabelClusterName: "kubernetes-prod"}},
		"spec":     map[string]any{"clusterName": "kubernetes-prod", "providerID": pid},
		"status":   map[string]any{"nodeRef": map[string]any{"name": node}},
	}}
}
