package verify

import (
	"fmt"
	"time"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/poolheal"
)

// healing is what the controller's pool healing would do about the
// namespace's worker VMs at the time of the snapshot (poolheal.Plan over
// every kind), with the pools it heals.
type healing struct {
	acts    map[int]bool
	waits   map[int]poolheal.Waiting
	pools   map[string]bool
	machine map[string]Machine
}

// healingPlan plans the namespace's worker VMs as the controller would,
// with the default grace period (--pool-healing-grace).
func healingPlan(s *Snapshot) healing {
	h := healing{acts: map[int]bool{}, waits: map[int]poolheal.Waiting{}, pools: s.Management.HealingPools,
		machine: map[string]Machine{}}
	for _, m := range s.Management.Machines {
		h.machine[m.Name] = m
	}
	p := poolheal.Pool{Now: s.Taken, Enabled: poolheal.Kinds}
	for _, pm := range s.Management.ProxmoxMachines {
		p.Machines = append(p.Machines, poolheal.Machine{Name: pm.Name, Machine: pm.Machine, VMID: int(pm.VMID), Provisioned: pm.Provisioned,
			HasNode: h.machine[pm.Machine].NodeRef != "", Deleting: pm.Deleting, StoppedOnPurpose: pm.StoppedOnPurpose})
	}
	if s.Proxmox != nil {
		for _, vm := range s.Proxmox.VMs {
			p.VMs = append(p.VMs, poolheal.VM{VMID: vm.VMID, Name: vm.Name, Node: vm.Node, Running: vm.Status == "running", Template: vm.Template,
				Lock: vm.Lock, Tags: vm.Tags, Created: vm.Created, NodeOnline: !vm.NodeOffline})
		}
	}
	acts, waits := poolheal.Plan(p)
	for _, a := range acts {
		h.acts[a.VMID] = true
	}
	for _, w := range waits {
		h.waits[w.VMID] = w
	}
	return h
}

// about says what pool healing does about f, a finding about a VM of pm:
// whether the pool heals, and if so what the controller does and when.
func (h healing) about(f Finding, pm ProxmoxMachine) string {
	if f.Code != CodeDuplicateWorkerVM && f.Code != CodeWorkerVMStopped {
		return ""
	}
	verb := "destroys VM %d"
	if f.Code == CodeWorkerVMStopped {
		verb = "starts VM %d"
	}
	verb = fmt.Sprintf(verb, f.VMID)
	md := h.machine[pm.Machine].Labels[capmox.LabelDeploymentName]
	acts := h.acts[f.VMID]
	w, waits := h.waits[f.VMID]
	switch {
	case md == "":
		return fmt.Sprintf("no pool healing: Machine %s belongs to no MachineDeployment", pm.Machine)
	case !h.pools[md]:
		if !acts && !waits {
			return fmt.Sprintf("pool healing leaves VM %d alone (%s)", f.VMID, leftAlone(pm))
		}
		return fmt.Sprintf("pool healing is off for MachineDeployment %s: with proxmox.heal: true on the pool (the label %s=true), or the controller's --pool-healing=all, the controller %s",
			md, poolheal.Label, when(verb, acts, w))
	case acts || waits:
		return "the controller's pool healing " + when(verb, acts, w)
	}
	return fmt.Sprintf("the controller's pool healing leaves VM %d alone (%s)", f.VMID, leftAlone(pm))
}

// when says when the controller takes the action: at its next look, at a
// time, or once what it waits for is over.
func when(verb string, acts bool, w poolheal.Waiting) string {
	switch {
	case acts:
		return verb + " at its next look at the pool (every --pool-healing-interval, 1m by default)"
	case !w.After.IsZero():
		return fmt.Sprintf("%s from %s (%s, with the default --pool-healing-grace %s)", verb, w.After.UTC().Format(time.RFC3339), w.Why, poolheal.DefaultGrace)
	}
	return fmt.Sprintf("%s once this is over: %s", verb, w.Why)
}

// leftAlone says why pool healing takes no action on a VM of pm.
func leftAlone(pm ProxmoxMachine) string {
	switch {
	case pm.StoppedOnPurpose:
		return "its ProxmoxMachine carries " + poolheal.StoppedAnnotation + ": stopped on purpose"
	case pm.Deleting:
		return "its ProxmoxMachine is being deleted"
	}
	return "it is stopped on purpose (tag " + poolheal.StoppedTag + ") or its Machine has a Node"
}
