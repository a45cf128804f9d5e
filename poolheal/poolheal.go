// Package poolheal decides how a worker pool on Proxmox VE heals the
// faults capmox leaves behind without a human: a clone whose VM id capmox
// lost (it clones again, and the first clone holds its id, disks and
// memory for nothing), a VM capmox reports provisioned but never started
// (after a failed clone call, or a failed first start, capmox v0.9.0 never
// starts it), and a VM whose delete capmox stopped retrying while its node
// was offline (its failure backoff then waits up to 1000 s).
//
// Plan is pure: it takes what the pool is (its ProxmoxMachines, the VMs of
// its Proxmox pool, the time) and returns what to do. The caller (the
// proxmox-network controller) gathers the pool, carries the actions out
// and records each as an Event and a metric.
//
// What it never does: destroy a VM a ProxmoxMachine records; act on a VM
// under a lock (a clone, a migration, a backup: any task of qemu-server
// that locks the VM) or younger than the grace period; destroy a VM that
// is not in the pool's Proxmox pool or not named after one of the pool's
// ProxmoxMachines; destroy a VM named after a ProxmoxMachine that records
// no VM yet (its clone may be the one under way); start a VM stopped on
// purpose (the Tag StoppedTag on the VM, or the annotation StoppedAnnotation
// on its ProxmoxMachine); start the VM of a ProxmoxMachine being deleted.
package poolheal

import (
	"fmt"
	"slices"
	"time"
)

// Kind is a kind of healing, as metrics and Events name it.
type Kind string

// The kinds of healing.
const (
	// KindDestroyLostClone stops and destroys (purging it, with its
	// unreferenced disks) a VM capmox cloned for a ProxmoxMachine that
	// records another VM.
	KindDestroyLostClone Kind = "DestroyLostClone"
	// KindStartStopped starts the stopped VM a provisioned ProxmoxMachine
	// records while its Machine has no Node.
	KindStartStopped Kind = "StartStopped"
	// KindRetryDelete asks capmox to try again at once to delete the VM of
	// a ProxmoxMachine being deleted, once the VM's node is back online.
	KindRetryDelete Kind = "RetryDelete"
)

// Kinds lists every kind, in the order Plan considers them.
var Kinds = []Kind{KindDestroyLostClone, KindStartStopped, KindRetryDelete}

// Label "true" on a MachineDeployment turns healing on for its pool
// (capmoxrender writes it for proxmox.heal).
const Label = "proxmox.cozystack.io/heal"

// StoppedTag on a VM, or StoppedAnnotation on its ProxmoxMachine, says an
// operator stopped the VM on purpose: it is never started.
const (
	StoppedTag        = "pxsubstrate-stopped"
	StoppedAnnotation = "proxmox.cozystack.io/stopped"
)

// RetryAnnotation on a ProxmoxMachine is when the controller last asked
// capmox to try its delete again (RFC 3339): any change of the
// ProxmoxMachine makes capmox reconcile it at once, out of its failure
// backoff. RetryEvery is how long the controller waits before it asks
// again.
const (
	RetryAnnotation = "proxmox.cozystack.io/heal-retry-delete"
	RetryEvery      = time.Minute
)

// DefaultGrace is the least age of a VM Plan acts on: longer than a clone
// of a large template, so that a clone capmox is still recording is never
// taken for a lost one.
const DefaultGrace = 5 * time.Minute

// Machine is one ProxmoxMachine of the pool.
type Machine struct {
	// Name is the ProxmoxMachine's name, which capmox names its VM after.
	Name string
	// Machine is its Cluster API Machine's name.
	Machine string
	// VMID is the VM capmox records (spec.virtualMachineID), 0 for none.
	VMID int
	// Provisioned is capmox's word that the VM is provisioned.
	Provisioned bool
	// HasNode says its Machine has a Node (status.nodeRef).
	HasNode bool
	// Deleting says the ProxmoxMachine is being deleted.
	Deleting bool
	// StoppedOnPurpose is StoppedAnnotation on the ProxmoxMachine.
	StoppedOnPurpose bool
	// DeleteFailedSince is when capmox last failed to delete its VM (a
	// Deleting ProxmoxMachine whose VM capmox could not reach), zero for
	// never.
	DeleteFailedSince time.Time
	// RetriedAt is RetryAnnotation, zero for never.
	RetriedAt time.Time
}

// VM is a guest of the pool's Proxmox pool, as /cluster/resources and its
// configuration show it.
type VM struct {
	VMID int
	Name string
	Node string
	// Running is status "running".
	Running bool
	// Template marks a template, which Plan never touches.
	Template bool
	// Lock is the VM's configuration lock ("clone", "migrate", ...), ""
	// for none.
	Lock string
	// Tags are the VM's tags.
	Tags []string
	// Created is when the VM was made (its meta ctime), zero if unknown:
	// an unknown age is never old enough.
	Created time.Time
	// NodeOnline says the VM's node answers.
	NodeOnline bool
}

// Pool is what Plan reads: one pool's ProxmoxMachines and the VMs of its
// Proxmox pool.
type Pool struct {
	Machines []Machine
	VMs      []VM
	// Now is the time Plan decides at; Grace the least age of a VM it acts
	// on (DefaultGrace when zero).
	Now   time.Time
	Grace time.Duration
	// Enabled are the kinds of healing the pool takes; nil takes none.
	Enabled []Kind
}

// Action is one thing to do.
type Action struct {
	Kind Kind
	// VMID and Node name the VM; Machine the ProxmoxMachine it concerns.
	VMID    int
	Node    string
	Machine string
	// Reason says why, in words for an Event.
	Reason string
}

// Waiting is a fault Plan saw and does not act on yet, with when it
// will (for verify to say what the controller will do and when).
type Waiting struct {
	Kind    Kind
	VMID    int
	Machine string
	// After is the earliest time Plan acts, zero when it waits for a
	// condition rather than the clock (a lock to go, a node to return).
	After time.Time
	// Why says what it waits for.
	Why string
}

// Plan returns the actions that heal the pool now, and the faults it sees
// but leaves for later, each at most once per VM.
func Plan(p Pool) ([]Action, []Waiting) {
	grace := p.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	recorded := map[int]Machine{}
	byName := map[string]Machine{}
	for _, m := range p.Machines {
		byName[m.Name] = m
		if m.VMID > 0 {
			recorded[m.VMID] = m
		}
	}
	var acts []Action
	var waits []Waiting
	for _, vm := range p.VMs {
		if vm.Template {
			continue
		}
		a, w, ok := judge(vm, recorded, byName, p.Now, grace)
		switch {
		case !ok:
		case w.Kind != "":
			waits = append(waits, w)
		case slices.Contains(p.Enabled, a.Kind):
			acts = append(acts, a)
		default:
			waits = append(waits, Waiting{Kind: a.Kind, VMID: a.VMID, Machine: a.Machine, Why: "healing of this kind is off for the pool"})
		}
	}
	return acts, waits
}

// judge is what Plan does about one VM: an action, a wait, or nothing.
func judge(vm VM, recorded map[int]Machine, byName map[string]Machine, now time.Time, grace time.Duration) (Action, Waiting, bool) {
	if m, ok := recorded[vm.VMID]; ok {
		return judgeRecorded(vm, m, now, grace)
	}
	m, named := byName[vm.Name]
	// A VM no ProxmoxMachine records is a lost clone only when the
	// ProxmoxMachine of its name records another VM; one that records none
	// may be cloning it right now.
	if !named || m.VMID == 0 || m.Deleting {
		return Action{}, Waiting{}, false
	}
	a := Action{Kind: KindDestroyLostClone, VMID: vm.VMID, Node: vm.Node, Machine: m.Name,
		Reason: fmt.Sprintf("VM %d is named after ProxmoxMachine %s, which records VM %d: capmox cloned it and lost its id", vm.VMID, m.Name, m.VMID)}
	if w, wait := settled(vm, a, now, grace); wait {
		return Action{}, w, true
	}
	return a, Waiting{}, true
}

// judgeRecorded is what Plan does about a VM a ProxmoxMachine records:
// start it, or ask capmox to delete it again; never destroy it.
func judgeRecorded(vm VM, m Machine, now time.Time, grace time.Duration) (Action, Waiting, bool) {
	switch {
	case m.Deleting && !m.DeleteFailedSince.IsZero():
		a := Action{Kind: KindRetryDelete, VMID: vm.VMID, Node: vm.Node, Machine: m.Name,
			Reason: fmt.Sprintf("capmox failed to delete VM %d of ProxmoxMachine %s while node %s was offline, and its backoff would wait up to 1000 s", vm.VMID, m.Name, vm.Node)}
		switch {
		case !vm.NodeOnline:
			return Action{}, Waiting{Kind: a.Kind, VMID: vm.VMID, Machine: m.Name, Why: "node " + vm.Node + " is offline"}, true
		case !m.RetriedAt.IsZero() && now.Sub(m.RetriedAt) < RetryEvery:
			return Action{}, Waiting{Kind: a.Kind, VMID: vm.VMID, Machine: m.Name, After: m.RetriedAt.Add(RetryEvery),
				Why: "capmox was asked to try again at " + m.RetriedAt.UTC().Format(time.RFC3339)}, true
		}
		return a, Waiting{}, true
	case m.Deleting || vm.Running || !m.Provisioned || m.HasNode:
		return Action{}, Waiting{}, false
	case m.StoppedOnPurpose || slices.Contains(vm.Tags, StoppedTag):
		return Action{}, Waiting{}, false
	}
	a := Action{Kind: KindStartStopped, VMID: vm.VMID, Node: vm.Node, Machine: m.Name,
		Reason: fmt.Sprintf("VM %d of ProxmoxMachine %s is stopped while capmox reports it provisioned, and capmox never starts it again", vm.VMID, m.Name)}
	if !vm.NodeOnline {
		return Action{}, Waiting{Kind: a.Kind, VMID: vm.VMID, Machine: m.Name, Why: "node " + vm.Node + " is offline"}, true
	}
	if w, wait := settled(vm, a, now, grace); wait {
		return Action{}, w, true
	}
	return a, Waiting{}, true
}

// settled says whether vm must wait before a is taken: under a lock, of
// unknown age, or younger than grace.
func settled(vm VM, a Action, now time.Time, grace time.Duration) (Waiting, bool) {
	w := Waiting{Kind: a.Kind, VMID: vm.VMID, Machine: a.Machine}
	switch {
	case vm.Lock != "":
		w.Why = "VM is locked (" + vm.Lock + ")"
	case vm.Created.IsZero():
		w.Why = "VM's age is unknown"
	case now.Sub(vm.Created) < grace:
		w.After, w.Why = vm.Created.Add(grace), fmt.Sprintf("VM is younger than the grace period %s", grace)
	case !vm.NodeOnline:
		w.Why = "node " + vm.Node + " is offline"
	default:
		return Waiting{}, false
	}
	return w, true
}
