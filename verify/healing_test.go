package verify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/poolheal"
)

var mdGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineDeployment"}

// TestWorkerVMHealing: each DuplicateWorkerVM and WorkerVMStopped says
// what the controller's pool healing does about it and when, as
// poolheal.Plan decides: at its next look for an old lost clone of a
// healing pool, at the end of the grace period for a young one, once its
// node is back for one on an offline node, never for a VM stopped on
// purpose; a pool without healing is told how to turn it on.
func TestWorkerVMHealing(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	old, young := now.Add(-time.Hour), now.Add(-time.Minute)
	for name, tc := range map[string]struct {
		healing   bool
		vm        PoolVM
		onPurpose bool
		code      string
		want      string
	}{
		"OldLostClone": {healing: true, vm: PoolVM{VMID: 100, Name: "w-1", Status: "running", Created: old},
			code: CodeDuplicateWorkerVM, want: "the controller's pool healing destroys VM 100 at its next look at the pool"},
		"YoungLostClone": {healing: true, vm: PoolVM{VMID: 100, Name: "w-1", Status: "running", Created: young},
			code: CodeDuplicateWorkerVM, want: "destroys VM 100 from 2026-12-06T12:04:00Z (VM is younger than the grace period 5m0s"},
		"UnknownAge": {healing: true, vm: PoolVM{VMID: 100, Name: "w-1", Status: "running"},
			code: CodeDuplicateWorkerVM, want: "destroys VM 100 once this is over: VM's age is unknown"},
		"NodeOffline": {healing: true, vm: PoolVM{VMID: 100, Name: "w-1", Status: "unknown", NodeOffline: true, Created: old},
			code: CodeDuplicateWorkerVM, want: "destroys VM 100 once this is over: node pve1 is offline"},
		"Stopped": {healing: true, vm: PoolVM{VMID: 101, Name: "w-1", Status: "stopped", Created: old},
			code: CodeWorkerVMStopped, want: "the controller's pool healing starts VM 101 at its next look"},
		"StoppedTagged": {healing: true, vm: PoolVM{VMID: 101, Name: "w-1", Status: "stopped", Created: old, Tags: []string{poolheal.StoppedTag}},
			code: CodeWorkerVMStopped, want: "pool healing leaves VM 101 alone (it is stopped on purpose (tag pxsubstrate-stopped)"},
		"StoppedAnnotated": {healing: true, onPurpose: true, vm: PoolVM{VMID: 101, Name: "w-1", Status: "stopped", Created: old},
			code: CodeWorkerVMStopped, want: "leaves VM 101 alone (its ProxmoxMachine carries proxmox.cozystack.io/stopped"},
		"HealingOff": {vm: PoolVM{VMID: 100, Name: "w-1", Status: "running", Created: old},
			code: CodeDuplicateWorkerVM, want: "pool healing is off for MachineDeployment md-a: with proxmox.heal: true on the pool (the label proxmox.cozystack.io/heal=true), or the controller's --pool-healing=all, the controller destroys VM 100 at its next look"},
	} {
		t.Run(name, func(t *testing.T) {
			s := snapshotOf()
			s.Taken = now
			m := machineOf("m-1")
			m.Labels[capmox.LabelDeploymentName] = "md-a"
			s.Management.Machines = []Machine{m}
			pm := ProxmoxMachine{Name: "w-1", Machine: "m-1", Pool: "tenant-a", VMID: 101, Provisioned: true, StoppedOnPurpose: tc.onPurpose}
			s.Management.ProxmoxMachines = []ProxmoxMachine{pm}
			s.Management.HealingPools = map[string]bool{"md-a": tc.healing}
			vm := tc.vm
			vm.Node, vm.Pool = "pve1", "tenant-a"
			vms := []PoolVM{vm}
			if vm.VMID != 101 {
				vms = append(vms, PoolVM{VMID: 101, Name: "w-1", Node: "pve2", Pool: "tenant-a", Status: "running", Created: old})
			}
			s.Proxmox = &Proxmox{VMs: vms}
			got := CheckWorkerVMs(s)
			if len(got) != 1 || got[0].Code != tc.code {
				t.Fatalf("findings %+v, want one %s", got, tc.code)
			}
			if !strings.Contains(got[0].Healing, tc.want) {
				t.Errorf("healing %q, want it to say %q", got[0].Healing, tc.want)
			}
		})
	}
}

// TestGatherHealing reads the pools that heal (MachineDeployments
// labelled poolheal.Label), the nodes' state and the age and current lock
// of the VMs the worker checks may flag, and of no other VM: the fake
// answers no other configuration. A VM destroyed between the list and the
// read of its configuration is left out.
func TestGatherHealing(t *testing.T) {
	pm := object(pmGVK, "w-1", map[string]any{
		"spec":   map[string]any{"virtualMachineID": int64(101), "pool": "tenant-a"},
		"status": map[string]any{"initialization": map[string]any{"provisioned": true}},
	})
	healed, plain := object(mdGVK, "md-a", nil), object(mdGVK, "md-b", nil)
	healed.SetLabels(map[string]string{poolheal.Label: "true"})
	plain.SetLabels(map[string]string{poolheal.Label: "false"})
	mgmt := management(t, []schema.GroupVersionKind{machineGVK, pmGVK, mdGVK}, pm, healed, plain)
	api := fakePVE{vms: `[{"type":"qemu","vmid":101,"name":"w-1","node":"pve1","pool":"tenant-a","status":"stopped","tags":"talos;pxsubstrate-stopped"},
		{"type":"qemu","vmid":100,"name":"w-1","node":"pve1","pool":"tenant-a","status":"running"},
		{"type":"qemu","vmid":102,"name":"other","node":"pve1","pool":"tenant-a","status":"stopped"},
		{"type":"qemu","vmid":103,"name":"w-1","node":"pve2","pool":"tenant-a","status":"unknown"},
		{"type":"qemu","vmid":104,"name":"w-1","node":"pve1","pool":"tenant-a","status":"running"}]`,
		nodes: `[{"type":"node","node":"pve1","status":"online"},{"type":"node","node":"pve2","status":"offline"}]`,
		configs: map[string]string{
			"/nodes/pve1/qemu/101/config": `{"meta":"creation-qemu=9.2.0,ctime=1700000000"}`,
			"/nodes/pve1/qemu/100/config": `{"meta":"ctime=1700000100","lock":"clone"}`,
			"/nodes/pve1/qemu/104/config": "gone",
		}}
	before := time.Now()
	s, err := Gather(context.Background(), Sources{Management: mgmt, Mapper: mgmt.RESTMapper(), Proxmox: api},
		Target{Namespace: "tenant-a", CAPIVersion: "v1beta2"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Taken.Before(before) {
		t.Errorf("taken %v, before the gather began", s.Taken)
	}
	if diff := cmp.Diff(map[string]bool{"md-a": true}, s.Management.HealingPools); diff != "" {
		t.Errorf("healing pools (-want +got):\n%s", diff)
	}
	want := []PoolVM{
		{VMID: 101, Name: "w-1", Node: "pve1", Pool: "tenant-a", Status: "stopped", Tags: []string{"talos", "pxsubstrate-stopped"}, Created: time.Unix(1700000000, 0)},
		{VMID: 100, Name: "w-1", Node: "pve1", Pool: "tenant-a", Status: "running", Lock: "clone", Created: time.Unix(1700000100, 0)},
		{VMID: 102, Name: "other", Node: "pve1", Pool: "tenant-a", Status: "stopped"},
		{VMID: 103, Name: "w-1", Node: "pve2", Pool: "tenant-a", Status: "unknown", NodeOffline: true},
	}
	if diff := cmp.Diff(want, s.Proxmox.VMs); diff != "" {
		t.Errorf("VMs (-want +got):\n%s", diff)
	}
}
