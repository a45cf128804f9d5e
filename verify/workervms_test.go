package verify

import (
	"strings"
	"testing"
)

// poolMachine is a ProxmoxMachine of tenant-a cloned into pool that
// records vmid (0: none yet).
func poolMachine(name, pool string, vmid int64) ProxmoxMachine {
	return ProxmoxMachine{Name: name, Machine: name, Pool: pool, VMID: vmid}
}

func checkWorkerVMsOf(pms []ProxmoxMachine, vms []PoolVM) []Finding {
	s := snapshotOf()
	s.Management.ProxmoxMachines = pms
	s.Proxmox = &Proxmox{VMs: vms}
	return CheckWorkerVMs(s)
}

// TestCheckWorkerVMs: the VMs the ProxmoxMachines record, the template,
// a clone under way and the VMs of other pools are no finding; a second
// VM named after a ProxmoxMachine that records another is an error
// naming both and the commands that remove it; a VM of the pool no
// ProxmoxMachine knows is a warning.
func TestCheckWorkerVMs(t *testing.T) {
	pms := []ProxmoxMachine{poolMachine("w-1", "tenant-a", 101), poolMachine("w-2", "tenant-a", 102), poolMachine("w-3", "tenant-a", 0)}
	control := []PoolVM{
		{VMID: 101, Name: "w-1", Node: "pve1", Pool: "tenant-a"},
		{VMID: 102, Name: "w-2", Node: "pve2", Pool: "tenant-a"},
		{VMID: 103, Name: "w-3", Node: "pve1", Pool: "tenant-a"},                // w-3's clone, its id not written yet
		{VMID: 104, Name: "w-4", Node: "pve1", Pool: "tenant-a", Lock: "clone"}, // a clone under way
		{VMID: 9000, Name: "talos", Node: "pve1", Pool: "tenant-a", Template: true},
		{VMID: 200, Name: "w-1", Node: "pve1", Pool: "tenant-b"},
	}
	if got := checkWorkerVMsOf(pms, control); len(got) != 0 {
		t.Fatalf("control: findings %+v", got)
	}
	got := checkWorkerVMsOf(pms, append(control,
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
	if got := CheckWorkerVMs(snapshotOf()); got != nil {
		t.Errorf("without Proxmox VE nothing is judged: %+v", got)
	}
}

// TestCheckWorkerVMsPoolNotVisible: a token that sees no VM of a pool
// whose ProxmoxMachines record VMs is told so, not passed as clean; a
// pool whose ProxmoxMachines record none yet needs no VM.
func TestCheckWorkerVMsPoolNotVisible(t *testing.T) {
	got := checkWorkerVMsOf([]ProxmoxMachine{poolMachine("w-1", "tenant-a", 101), poolMachine("n-1", "tenant-new", 0)}, nil)
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
	provisioned := func(name string, vmid int64, yes bool) ProxmoxMachine {
		pm := poolMachine(name, "tenant-a", vmid)
		pm.Machine, pm.Provisioned = "m-"+name, yes
		return pm
	}
	got := checkWorkerVMsOf([]ProxmoxMachine{provisioned("stuck", 120, true), provisioned("booting", 121, false), provisioned("fine", 122, true)}, []PoolVM{
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
