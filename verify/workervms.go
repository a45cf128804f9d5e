package verify

import (
	"fmt"
	"sort"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Finding codes of the worker VMs in the tenant's Proxmox pools.
const (
	// CodeDuplicateWorkerVM: a VM of the pool bears the name of a
	// ProxmoxMachine that records another VM. capmox names each clone
	// after its ProxmoxMachine and finds the VM by the id it recorded, so
	// a clone whose id it did not record (capmox v0.9.0 records none when
	// its write of the ProxmoxCluster's node locations after the clone
	// fails) is never found again: capmox clones once more, and the first
	// clone holds its VM id, disks and memory until someone removes it.
	CodeDuplicateWorkerVM = "DuplicateWorkerVM"
	// CodeWorkerVMWithoutMachine: a VM of the pool that no ProxmoxMachine
	// of the namespace records or is named after.
	CodeWorkerVMWithoutMachine = "WorkerVMWithoutMachine"
	// CodeWorkerVMStopped: the VM a provisioned ProxmoxMachine records is
	// not running. capmox v0.9.0 starts a VM once, before it reports the
	// ProxmoxMachine provisioned, and never again (v0.7.2 starts it on each
	// turn); v0.9.0 also reports provisioned a VM it never configured or
	// started, after a clone call that returned an error (its state
	// machine goes on only from reason Cloning, and the failure left
	// CloningFailed).
	CodeWorkerVMStopped = "WorkerVMStopped"
	// CodePoolNotVisible: the token sees no VM of a pool whose
	// ProxmoxMachines record VMs, so the two checks above could not run.
	CodePoolNotVisible = "PoolNotVisible"
)

// CheckWorkerVMs compares the guests the token sees (s.Proxmox) with the
// ProxmoxMachines of the namespace; without Proxmox VE it judges nothing. For each pool the ProxmoxMachines name
// (spec.pool), a guest that no ProxmoxMachine records (spec.virtualMachineID)
// is a DuplicateWorkerVM (an error) when a ProxmoxMachine of its name
// records another VM, and a WorkerVMWithoutMachine (a warning) when none
// is named after it; a recorded guest that is stopped while its
// ProxmoxMachine is reported provisioned is a WorkerVMStopped (an error);
// templates, guests under a clone lock and guests
// named after a ProxmoxMachine that records no VM yet (its clone is under
// way) are passed over. A pool whose ProxmoxMachines record VMs but of
// which the token sees none is a PoolNotVisible warning.
func CheckWorkerVMs(s *Snapshot) []Finding {
	if s.Proxmox == nil {
		return nil
	}
	namespace := s.Target.Namespace
	ix := indexWorkers(s.Management.ProxmoxMachines)
	heal := healingPlan(s)
	seen := map[string]bool{}
	var out []Finding
	for _, vm := range s.Proxmox.VMs {
		if _, ours := ix.pools[vm.Pool]; !ours {
			continue
		}
		seen[vm.Pool] = true
		if vm.Template || vm.Lock == "clone" {
			continue
		}
		if f, ok := judgeVM(vm, namespace, ix.recorded, ix.byName); ok {
			f.Healing = heal.about(f, ix.owner(vm))
			out = append(out, f)
		}
	}
	for pool, records := range ix.pools {
		if records && !seen[pool] {
			pool := termsafe.Cut(pool) // the ProxmoxMachines' spec, unchecked
			out = append(out, Finding{Code: CodePoolNotVisible, Warning: true,
				Problem: fmt.Sprintf("the token sees no VM of pool %s, where ProxmoxMachines of namespace %s record VMs: duplicate clones were not looked for", pool, namespace),
				Fix:     fmt.Sprintf("give a token with VM.Audit on /pool/%s (the tenant's capmox token has it)", pool)})
		}
	}
	// Errors first, then by problem.
	sort.Slice(out, func(i, j int) bool {
		if out[i].Warning != out[j].Warning {
			return !out[i].Warning
		}
		return out[i].Problem < out[j].Problem
	})
	return out
}

// workerIndex is the namespace's ProxmoxMachines by the VM each records
// and by name, and their pools (a pool is true when some ProxmoxMachine
// records a VM in it).
type workerIndex struct {
	recorded map[int64]ProxmoxMachine
	byName   map[string]ProxmoxMachine
	pools    map[string]bool
}

func indexWorkers(pms []ProxmoxMachine) workerIndex {
	ix := workerIndex{recorded: map[int64]ProxmoxMachine{}, byName: map[string]ProxmoxMachine{}, pools: map[string]bool{}}
	for _, pm := range pms {
		if pm.Pool == "" {
			continue
		}
		ix.byName[pm.Name] = pm
		ix.pools[pm.Pool] = ix.pools[pm.Pool] || pm.VMID > 0
		if pm.VMID > 0 {
			ix.recorded[pm.VMID] = pm
		}
	}
	return ix
}

// owner is the ProxmoxMachine a worker VM finding is about: the one that
// records vm, else the one it is named after.
func (ix workerIndex) owner(vm PoolVM) ProxmoxMachine {
	if pm, ok := ix.recorded[int64(vm.VMID)]; ok {
		return pm
	}
	return ix.byName[vm.Name]
}

// mayHeal says whether vm may be a DuplicateWorkerVM or a
// WorkerVMStopped, the findings the controller's pool healing acts on:
// Gather reads the age of those VMs only.
func (ix workerIndex) mayHeal(vm PoolVM) bool {
	if _, ours := ix.pools[vm.Pool]; !ours || vm.Template {
		return false
	}
	if pm, ok := ix.recorded[int64(vm.VMID)]; ok {
		return pm.Provisioned && vm.Status == "stopped"
	}
	pm, named := ix.byName[vm.Name]
	return named && pm.VMID > 0
}

// judgeVM is the finding of one VM of the namespace's pools, if any: see
// CheckWorkerVMs.
func judgeVM(vm PoolVM, namespace string, recorded map[int64]ProxmoxMachine, byName map[string]ProxmoxMachine) (Finding, bool) {
	pm, named := byName[vm.Name]
	// The node, name and pool come from the Proxmox VE API: messages cut
	// them (the finding's Node field keeps the node whole).
	node, name, pool := termsafe.Cut(vm.Node), termsafe.Cut(vm.Name), termsafe.Cut(vm.Pool)
	if pm, ok := recorded[int64(vm.VMID)]; ok {
		if !pm.Provisioned || vm.Status != "stopped" {
			return Finding{}, false
		}
		return Finding{Code: CodeWorkerVMStopped, VMID: vm.VMID, Node: vm.Node,
			Problem: fmt.Sprintf("VM %d on %s of ProxmoxMachine %s/%s is stopped, and capmox reports the ProxmoxMachine provisioned: capmox v0.9.0 never starts it again, "+
				"and Machine %s has no running worker (capmox v0.9.0 also reports provisioned a VM it never configured or started when its clone call failed)",
				vm.VMID, node, namespace, pm.Name, pm.Machine),
			Fix: fmt.Sprintf("if the VM ran before and was stopped by hand, start it: pvesh create /nodes/%s/qemu/%d/status/start; otherwise kubectl -n %s delete machine %s "+
				"(Cluster API makes a new one, capmox destroys VM %d); the MachineHealthCheck does the same after nodeStartupTimeout when maxUnhealthy allows",
				node, vm.VMID, namespace, pm.Machine, vm.VMID)}, true
	}
	destroy := fmt.Sprintf("pvesh create /nodes/%s/qemu/%d/status/stop; pvesh delete /nodes/%s/qemu/%d --purge 1 --destroy-unreferenced-disks 1",
		node, vm.VMID, node, vm.VMID)
	switch {
	case named && pm.VMID > 0:
		return Finding{Code: CodeDuplicateWorkerVM, VMID: vm.VMID, Node: vm.Node,
			Problem: fmt.Sprintf("VM %d on %s in pool %s is named after ProxmoxMachine %s/%s, which records VM %d: capmox cloned it and lost its id, "+
				"and it holds its VM id, disks and memory for nothing", vm.VMID, node, pool, namespace, pm.Name, pm.VMID),
			Fix: "remove it (capmox never finds it again): " + destroy}, true
	case named:
		// Its ProxmoxMachine records no VM yet: a clone under way.
		return Finding{}, false
	default:
		return Finding{Code: CodeWorkerVMWithoutMachine, Warning: true, VMID: vm.VMID, Node: vm.Node,
			Problem: fmt.Sprintf("VM %d (%s) on %s in pool %s is no VM of a ProxmoxMachine of namespace %s", vm.VMID, name, node, pool, namespace),
			Fix:     "if no one made it on purpose (a clone whose ProxmoxMachine was deleted before capmox recorded it), remove it: " + destroy}, true
	}
}
