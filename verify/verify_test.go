package verify_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/verify"
)

const (
	uuidA = "proxmox://6c9a3b2e-1f4d-4d6e-9a1b-2c3d4e5f6a7b"
	uuidB = "proxmox://0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
)

var topo = map[string]string{verify.LabelRegion: "pve-eu1", verify.LabelZone: "pve1"}

func TestJudge(t *testing.T) {
	cases := map[string]struct {
		reason   string
		nodes    []verify.Node
		machines []verify.Machine
		want     []string // node/machine:problem count
		failed   bool
	}{
		"Healthy": {reason: "matching providerID, labels, no taint",
			nodes: []verify.Node{{Name: "w1", ProviderID: uuidA, Labels: topo}}, machines: []verify.Machine{{Name: "m1", ProviderID: uuidA, NodeRef: "w1"}},
			want: []string{"w1/m1:ok"}},
		"SameZone": {reason: "the zone names the Proxmox node the VM runs on",
			nodes: []verify.Node{{Name: "w1", ProviderID: uuidA, Labels: topo}}, machines: []verify.Machine{{Name: "m1", ProviderID: uuidA, NodeRef: "w1", VMID: 101, ProxmoxNode: "pve1"}},
			want: []string{"w1/m1:ok"}},
		"Migrated": {reason: "a VM moved to another Proxmox node after its Node was initialised", failed: true,
			nodes: []verify.Node{{Name: "w1", ProviderID: uuidA, Labels: topo}}, machines: []verify.Machine{{Name: "m1", ProviderID: uuidA, NodeRef: "w1", VMID: 101, ProxmoxNode: "pve2"}},
			want: []string{"w1/m1:zone label pve1, but the VM runs on Proxmox node pve2"}},
		"DefaultForm": {reason: "the CCM default providerID never matches capmox", failed: true,
			nodes:    []verify.Node{{Name: "w1", ProviderID: "proxmox://pve-eu1/119", Labels: topo}},
			machines: []verify.Machine{{Name: "m1", ProviderID: uuidA, NodeRef: "w1"}},
			want:     []string{"w1/m1:providerID is in the CCM default form proxmox://<region>/<vmid>|Machine m1 has providerID " + uuidA}},
		"Uninitialized": {reason: "no providerID, no labels, taint", failed: true,
			nodes:    []verify.Node{{Name: "w1", Uninitialized: true}},
			machines: []verify.Machine{{Name: "m1", ProviderID: uuidA}},
			want:     []string{"w1/:no providerID|no topology.kubernetes.io/region label|no topology.kubernetes.io/zone label|still tainted node.cloudprovider.kubernetes.io/uninitialized", "-/m1:no tenant Node has this providerID"}},
		"CaseOnly": {reason: "CAPI compares exactly", failed: true,
			nodes:    []verify.Node{{Name: "w1", ProviderID: "proxmox://6C9A3B2E-1F4D-4D6E-9A1B-2C3D4E5F6A7B", Labels: topo}},
			machines: []verify.Machine{{Name: "m1", ProviderID: uuidA}},
			want:     []string{"w1/m1:providerID differs from Machine m1's only in letter case"}},
		"Provisioning": {reason: "a Machine without providerID is reported", failed: true,
			nodes:    []verify.Node{{Name: "w1", ProviderID: uuidA, Labels: topo}},
			machines: []verify.Machine{{Name: "m1", ProviderID: uuidA}, {Name: "m2"}},
			want:     []string{"w1/m1:ok", "-/m2:Machine has no providerID yet"}},
		"DiskGrown": {reason: "a 50 GiB system disk leaves about 48 GiB to the kubelet",
			nodes:    []verify.Node{{Name: "w1", ProviderID: uuidA, Labels: topo, EphemeralStorage: 48 << 30}},
			machines: []verify.Machine{{Name: "m1", ProviderID: uuidA, NodeRef: "w1", BootVolumeGiB: 50}},
			want:     []string{"w1/m1:ok"}},
		"DiskNotGrown": {reason: "the clone kept the template's 20 GiB disk", failed: true,
			nodes:    []verify.Node{{Name: "w1", ProviderID: uuidA, Labels: topo, EphemeralStorage: 37 << 29}},
			machines: []verify.Machine{{Name: "m1", ProviderID: uuidA, NodeRef: "w1", BootVolumeGiB: 50}},
			want:     []string{"w1/m1:its filesystem holds 18.5 GiB, but the pool asked for a 50 GiB system disk (disks.bootVolume)"}},
		"DiskNotAsked": {reason: "without a bootVolume the template's disk is what was asked",
			nodes:    []verify.Node{{Name: "w1", ProviderID: uuidA, Labels: topo, EphemeralStorage: 18 << 30}},
			machines: []verify.Machine{{Name: "m1", ProviderID: uuidA, NodeRef: "w1"}},
			want:     []string{"w1/m1:ok"}},
		"Foreign": {reason: "a Node of no Machine", failed: true,
			nodes: []verify.Node{{Name: "w9", ProviderID: uuidB, Labels: topo}},
			want:  []string{"w9/:no Machine has this providerID"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rows := verify.Judge(tc.nodes, tc.machines)
			if diff := cmp.Diff(tc.want, summarize(rows)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			if verify.Failed(rows) != tc.failed {
				t.Errorf("%s: Failed = %t, want %t", tc.reason, !tc.failed, tc.failed)
			}
			for _, r := range rows {
				if len(r.Problems) != len(r.Fixes) {
					t.Errorf("every problem needs a fix: %+v", r)
				}
			}
		})
	}
}

func summarize(rows []verify.Row) []string {
	var out []string
	for _, r := range rows {
		s := r.Node + "/" + r.Machine + ":"
		if r.OK {
			s += "ok"
		}
		for i, p := range r.Problems {
			if i > 0 {
				s += "|"
			}
			s += p
		}
		out = append(out, s)
	}
	return out
}

// Clients builds fake management and tenant clients; exported for the CLI tests through a helper there.
func clients(t *testing.T) (client.Reader, client.Reader) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	node := func(name, pid string, labels map[string]string, taint bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: pid}}
		if taint {
			n.Spec.Taints = []corev1.Taint{{Key: verify.TaintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		}
		return n
	}
	w1 := node("w1", uuidA, topo, false)
	w1.Status.Capacity = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("18Gi")}
	tenant := fake.NewClientBuilder().WithScheme(s).WithObjects(
		w1,
		node("w2", "", nil, true),
	).Build()
	machine := func(name, cluster, pid, nodeRef string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
			"metadata": map[string]any{"name": name, "namespace": "tenant-a", "labels": map[string]any{verify.LabelClusterName: cluster}},
			"spec":     map[string]any{"clusterName": cluster, "providerID": pid, "infrastructureRef": map[string]any{"name": name + "-pm"}},
		}}
		if nodeRef != "" {
			_ = unstructured.SetNestedField(u.Object, nodeRef, "status", "nodeRef", "name")
		}
		return u
	}
	pm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "ProxmoxMachine",
		"metadata": map[string]any{"name": "m1-pm", "namespace": "tenant-a", "labels": map[string]any{verify.LabelClusterName: "kubernetes-prod"}},
		"spec": map[string]any{"virtualMachineID": int64(119), "providerID": uuidA,
			"disks": map[string]any{"bootVolume": map[string]any{"disk": "scsi0", "sizeGb": int64(50)}}},
		"status": map[string]any{"proxmoxNode": "pve1", "ready": true},
	}}
	mgmt := fake.NewClientBuilder().WithScheme(s).WithObjects(
		pm,
		machine("m1", "kubernetes-prod", uuidA, "w1"),
		machine("m2", "kubernetes-prod", uuidB, "w2"),
		machine("other", "kubernetes-dev", "proxmox://ffffffff-ffff-4fff-8fff-ffffffffffff", ""),
	).Build()
	return mgmt, tenant
}

func TestCollect(t *testing.T) {
	mgmt, tenant := clients(t)
	rows, err := verify.Collect(context.Background(), mgmt, tenant, verify.Target{Namespace: "tenant-a", Cluster: "kubernetes-prod", CAPIVersion: "v1beta1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"w1/m1:its filesystem holds 18.0 GiB, but the pool asked for a 50 GiB system disk (disks.bootVolume)",
		"w2/m2:no providerID|no topology.kubernetes.io/region label|no topology.kubernetes.io/zone label|still tainted node.cloudprovider.kubernetes.io/uninitialized",
	}
	if diff := cmp.Diff(want, summarize(rows)); diff != "" {
		t.Errorf("rows of the kubernetes-prod cluster only (-want +got):\n%s", diff)
	}
	if rows[0].VM != "119@pve1" || rows[1].VM != "" {
		t.Errorf("the VM column comes from the ProxmoxMachine: got %q and %q", rows[0].VM, rows[1].VM)
	}
}
