package verify

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// poolMachine is a ProxmoxMachine of tenant-a cloned into pool that
// records vmid (0: none yet).
func poolMachine(name, pool string, vmid int64) client.Object {
	pm := &unstructured.Unstructured{}
	pm.SetGroupVersionKind(pmGVK)
	pm.SetNamespace("tenant-a")
	pm.SetName(name)
	_ = unstructured.SetNestedField(pm.Object, pool, "spec", "pool")
	if vmid > 0 {
		_ = unstructured.SetNestedField(pm.Object, vmid, "spec", "virtualMachineID")
	}
	return pm
}

func checkWorkerVMsOnFake(t *testing.T, objs []client.Object, vms []PoolVM) []ManagementFinding {
	t.Helper()
	s := haScheme()
	mapper := meta.NewDefaultRESTMapper(s.PreferredVersionAllGroups())
	for gvk := range s.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).Build()
	got, err := CheckWorkerVMs(context.Background(), c, c.RESTMapper(), "tenant-a", vms)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCheckWorkerVMs: the VMs the ProxmoxMachines record, the template,
// a clone under way and the VMs of other pools are no finding; a second
// VM named after a ProxmoxMachine that records another is an error
// naming both and the commands that remove it; a VM of the pool no
// ProxmoxMachine knows is a warning.
func TestCheckWorkerVMs(t *testing.T) {
	objs := []client.Object{poolMachine("w-1", "tenant-a", 101), poolMachine("w-2", "tenant-a", 102), poolMachine("w-3", "tenant-a", 0)}
	control := []PoolVM{
		{VMID: 101, Name: "w-1", Node: "pve1", Pool: "tenant-a"},
		{VMID: 102, Name: "w-2", Node: "pve2", Pool: "tenant-a"},
		{VMID: 103, Name: "w-3", Node: "pve1", Pool: "tenant-a"},                // w-3's clone, its id not written yet
		{VMID: 104, Name: "w-4", Node: "pve1", Pool: "tenant-a", Lock: "clone"}, // a clone under way
		{VMID: 9000, Name: "talos", Node: "pve1", Pool: "tenant-a", Template: true},
		{VMID: 200, Name: "w-1", Node: "pve1", Pool: "tenant-b"},
	}
	if got := checkWorkerVMsOnFake(t, objs, control); len(got) != 0 {
		t.Fatalf("control: findings %+v", got)
	}
	got := checkWorkerVMsOnFake(t, objs, append(control,
		PoolVM{VMID: 100, Name: "w-1", Node: "pve1", Pool: "tenant-a"},
		PoolVM{VMID: 105, Name: "by-hand", Node: "pve3", Pool: "tenant-a"}))
	if len(got) != 2 {
		t.Fatalf("findings %+v, want 2", got)
	}
	dup, lone := got[0], got[1] // errors first
	if dup.Code != CodeDuplicateWorkerVM || dup.Warning || dup.VMID != 100 || dup.Node != "pve1" ||
		!strings.Contains(dup.Problem, "VM 100 on pve1 in pool tenant-a is named after ProxmoxMachine tenant-a/w-1, which records VM 101") ||
		!strings.Contains(dup.Fix, "pvesh create /nodes/pve1/qemu/100/status/stop; pvesh delete /nodes/pve1/qemu/100 --purge 1 --destroy-unreferenced-disks 1") {
		t.Errorf("duplicate: %+v", dup)
	}
	if lone.Code != CodeWorkerVMWithoutMachine || !lone.Warning ||
		!strings.Contains(lone.Problem, "VM 105 (by-hand) on pve3 in pool tenant-a is no VM of a ProxmoxMachine of namespace tenant-a") {
		t.Errorf("without machine: %+v", lone)
	}
}

// TestCheckWorkerVMsPoolNotVisible: a token that sees no VM of a pool
// whose ProxmoxMachines record VMs is told so, not passed as clean; a
// pool whose ProxmoxMachines record none yet needs no VM.
func TestCheckWorkerVMsPoolNotVisible(t *testing.T) {
	got := checkWorkerVMsOnFake(t, []client.Object{poolMachine("w-1", "tenant-a", 101), poolMachine("n-1", "tenant-new", 0)}, nil)
	if len(got) != 1 || got[0].Code != CodePoolNotVisible || !got[0].Warning ||
		!strings.Contains(got[0].Problem, "the token sees no VM of pool tenant-a") || !strings.Contains(got[0].Fix, "VM.Audit on /pool/tenant-a") {
		t.Errorf("findings %+v", got)
	}
}

// TestCheckWorkerVMStopped: the stopped VM of a ProxmoxMachine capmox
// reports provisioned is an error naming its Machine, with both fixes; a
// stopped VM whose ProxmoxMachine is not provisioned yet (capmox starts it
// later) and a running one are none.
func TestCheckWorkerVMStopped(t *testing.T) {
	provisioned := func(name string, vmid int64, yes bool) client.Object {
		pm := poolMachine(name, "tenant-a", vmid).(*unstructured.Unstructured)
		pm.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Machine", Name: "m-" + name, UID: types.UID("u-" + name)}})
		_ = unstructured.SetNestedField(pm.Object, yes, "status", "initialization", "provisioned")
		return pm
	}
	objs := []client.Object{provisioned("stuck", 120, true), provisioned("booting", 121, false), provisioned("fine", 122, true)}
	got := checkWorkerVMsOnFake(t, objs, []PoolVM{
		{VMID: 120, Name: "stuck", Node: "pve1", Pool: "tenant-a", Status: "stopped"},
		{VMID: 121, Name: "booting", Node: "pve1", Pool: "tenant-a", Status: "stopped"},
		{VMID: 122, Name: "fine", Node: "pve2", Pool: "tenant-a", Status: "running"},
	})
	if len(got) != 1 || got[0].Code != CodeWorkerVMStopped || got[0].Warning ||
		!strings.Contains(got[0].Problem, "VM 120 on pve1 of ProxmoxMachine tenant-a/stuck is stopped, and capmox reports the ProxmoxMachine provisioned") ||
		!strings.Contains(got[0].Problem, "Machine m-stuck has no running worker") ||
		!strings.Contains(got[0].Fix, "pvesh create /nodes/pve1/qemu/120/status/start; otherwise kubectl -n tenant-a delete machine m-stuck") {
		t.Errorf("findings %+v", got)
	}
}
