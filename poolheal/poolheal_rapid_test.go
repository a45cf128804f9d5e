package poolheal_test

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/poolheal"
)

// checks is how many runs TestPlanNeverTouchesRecordedOrInFlightVMs draws.
const checks = 2000

// model is a pool as capmox, an operator, Proxmox VE and the healing
// controller leave it, with the faults capmox is known for.
type model struct {
	now      time.Time
	nextVMID int
	nextName int
	machines map[string]*poolheal.Machine
	vms      map[int]*poolheal.VM
	offline  map[string]bool
	enabled  []poolheal.Kind
	// lost are VM ids capmox cloned and then lost the record of.
	lost map[int]bool
	// acted counts the actions the controller took, by kind.
	acted map[poolheal.Kind]int
}

var nodes = []string{"pve1", "pve2", "pve3"}

func newModel(t *rapid.T) *model {
	m := &model{now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), nextVMID: 100,
		machines: map[string]*poolheal.Machine{}, vms: map[int]*poolheal.VM{}, offline: map[string]bool{},
		lost: map[int]bool{}, acted: map[poolheal.Kind]int{}}
	m.enabled = rapid.SliceOfDistinct(rapid.SampledFrom(poolheal.Kinds), rapid.ID[poolheal.Kind]).Draw(t, "enabled")
	for range rapid.IntRange(1, 4).Draw(t, "machines") {
		name := fmt.Sprintf("w-%d", m.nextName)
		m.nextName++
		m.machines[name] = &poolheal.Machine{Name: name, Machine: "m-" + name}
	}
	return m
}

func (m *model) pool() poolheal.Pool {
	p := poolheal.Pool{Now: m.now, Enabled: m.enabled}
	for _, name := range slices.Sorted(maps.Keys(m.machines)) {
		p.Machines = append(p.Machines, *m.machines[name])
	}
	for _, id := range slices.Sorted(maps.Keys(m.vms)) {
		vm := *m.vms[id]
		vm.NodeOnline = !m.offline[vm.Node]
		vm.Tags = slices.Clone(vm.Tags)
		p.VMs = append(p.VMs, vm)
	}
	return p
}

// machine draws one of the machines for which ok holds (every machine when
// ok is nil); nil when there is none, and the action does nothing.
func (m *model) machine(t *rapid.T, label string, ok func(*poolheal.Machine) bool) *poolheal.Machine {
	return pick(t, label, m.machines, ok)
}

// vm draws one of the VMs for which ok holds (every VM when ok is nil);
// nil when there is none.
func (m *model) vm(t *rapid.T, label string, ok func(*poolheal.VM) bool) *poolheal.VM {
	return pick(t, label, m.vms, ok)
}

// pick draws, in key order, one of the values of all for which ok holds;
// nil when none does.
func pick[K cmp.Ordered, V any](t *rapid.T, label string, all map[K]*V, ok func(*V) bool) *V {
	var keys []K
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if ok == nil || ok(all[k]) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return all[rapid.SampledFrom(keys).Draw(t, label)]
}

// recordedBy is the machine that records VM id, nil for none.
func (m *model) recordedBy(id int) *poolheal.Machine {
	for _, mc := range m.machines {
		if mc.VMID == id {
			return mc
		}
	}
	return nil
}

// actions are what capmox, the operator, Proxmox and time do to the pool.
func (m *model) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		// capmox starts a clone for a machine that records no VM: the
		// new VM is locked until the clone task ends.
		"cloneStart": func(t *rapid.T) {
			mc := m.machine(t, "machine", func(mc *poolheal.Machine) bool { return mc.VMID == 0 && !mc.Deleting })
			if mc == nil {
				return
			}
			id := m.nextVMID
			m.nextVMID++
			m.vms[id] = &poolheal.VM{VMID: id, Name: mc.Name, Node: rapid.SampledFrom(nodes).Draw(t, "node"), Lock: "clone", Created: m.now}
		},
		// The clone ends; capmox records the VM, or (its status write
		// refused) loses it and clones again later.
		"cloneEnd": func(t *rapid.T) {
			vm := m.vm(t, "vm", func(vm *poolheal.VM) bool { return vm.Lock == "clone" })
			if vm == nil {
				return
			}
			vm.Lock = ""
			mc := m.machines[vm.Name]
			if mc != nil && mc.VMID == 0 && !mc.Deleting && rapid.Bool().Draw(t, "recorded") {
				mc.VMID = vm.VMID
				return
			}
			m.lost[vm.VMID] = true
		},
		// capmox provisions a recorded VM: it starts it, or (a failed
		// first start) marks it provisioned stopped.
		"provision": func(t *rapid.T) {
			mc := m.machine(t, "machine", func(mc *poolheal.Machine) bool {
				_, ok := m.vms[mc.VMID]
				return mc.VMID != 0 && ok && !mc.Provisioned && !mc.Deleting
			})
			if mc == nil {
				return
			}
			vm := m.vms[mc.VMID]
			mc.Provisioned = true
			vm.Running = rapid.Bool().Draw(t, "started")
		},
		"nodeJoins": func(t *rapid.T) {
			mc := m.machine(t, "machine", nil)
			if mc == nil {
				return
			}
			if vm, ok := m.vms[mc.VMID]; ok && vm.Running {
				mc.HasNode = true
			}
		},
		// An operator stops a VM on purpose, by tag or annotation.
		"operatorStops": func(t *rapid.T) {
			vm := m.vm(t, "vm", nil)
			if vm == nil {
				return
			}
			vm.Running = false
			if mc := m.recordedBy(vm.VMID); mc != nil && rapid.Bool().Draw(t, "annotation") {
				mc.StoppedOnPurpose, mc.HasNode = true, false
				return
			}
			vm.Tags = append(vm.Tags, poolheal.StoppedTag)
		},
		"nodeDown": func(t *rapid.T) { m.offline[rapid.SampledFrom(nodes).Draw(t, "node")] = true },
		"nodeUp":   func(t *rapid.T) { delete(m.offline, rapid.SampledFrom(nodes).Draw(t, "node")) },
		// Cluster API deletes a machine; capmox deletes its VM, or fails
		// while the node is offline and backs off.
		"deleteMachine": func(t *rapid.T) {
			mc := m.machine(t, "machine", nil)
			if mc == nil {
				return
			}
			mc.Deleting = true
			m.capmoxDelete(mc)
		},
		"tick": func(t *rapid.T) {
			m.now = m.now.Add(time.Duration(rapid.IntRange(1, 600).Draw(t, "seconds")) * time.Second)
		},
		"controller": m.controller,
	}
}

// capmoxDelete is capmox deleting a deleting machine's VM: gone when its
// node answers, else a failure it backs off from.
func (m *model) capmoxDelete(mc *poolheal.Machine) {
	vm, ok := m.vms[mc.VMID]
	if ok && m.offline[vm.Node] {
		mc.DeleteFailedSince = m.now
		return
	}
	if ok {
		delete(m.vms, vm.VMID)
	}
	delete(m.machines, mc.Name)
	// The MachineSet makes a replacement, with a name of its own.
	name := fmt.Sprintf("w-%d", m.nextName)
	m.nextName++
	m.machines[name] = &poolheal.Machine{Name: name, Machine: "m-" + name}
}

// controller runs Plan and carries its actions out, checking each against
// the safety rules, from the model's own view, before it takes it.
func (m *model) controller(t *rapid.T) {
	acts, _ := poolheal.Plan(m.pool())
	for _, a := range acts {
		if !slices.Contains(m.enabled, a.Kind) {
			t.Fatalf("%s taken although the pool does not heal that kind", a.Kind)
		}
		vm, ok := m.vms[a.VMID]
		if !ok {
			t.Fatalf("%s on VM %d, which does not exist", a.Kind, a.VMID)
		}
		owner := m.recordedBy(a.VMID)
		switch a.Kind {
		case poolheal.KindDestroyLostClone:
			named := m.machines[vm.Name]
			switch {
			case owner != nil:
				t.Fatalf("destroying VM %d, which machine %s records", a.VMID, owner.Name)
			case vm.Lock != "":
				t.Fatalf("destroying VM %d under a %s lock", a.VMID, vm.Lock)
			case m.now.Sub(vm.Created) < poolheal.DefaultGrace:
				t.Fatalf("destroying VM %d, %s old", a.VMID, m.now.Sub(vm.Created))
			case named == nil || named.VMID == 0:
				t.Fatalf("destroying VM %d, named %q after no machine that records another VM", a.VMID, vm.Name)
			case m.offline[vm.Node]:
				t.Fatalf("destroying VM %d on offline node %s", a.VMID, vm.Node)
			}
			delete(m.vms, a.VMID)
		case poolheal.KindStartStopped:
			switch {
			case owner == nil:
				t.Fatalf("starting VM %d, which no machine records", a.VMID)
			case owner.StoppedOnPurpose || slices.Contains(vm.Tags, poolheal.StoppedTag):
				t.Fatalf("starting VM %d, stopped on purpose", a.VMID)
			case owner.Deleting || !owner.Provisioned || vm.Running:
				t.Fatalf("starting VM %d of machine %+v, VM %+v", a.VMID, *owner, *vm)
			}
			vm.Running = true
		case poolheal.KindRetryDelete:
			if owner == nil || !owner.Deleting || m.offline[vm.Node] {
				t.Fatalf("retrying the delete of VM %d, machine %v, node offline %v", a.VMID, owner, m.offline[vm.Node])
			}
			m.capmoxDelete(owner)
		}
		m.acted[a.Kind]++
	}
}

// settle stops every fault and runs the pool long enough to heal: nodes
// back, clones ended, time past the grace period, the controller twice.
// Then no lost clone is left, and every recorded VM capmox reports
// provisioned runs unless stopped on purpose, for the kinds the pool heals.
func (m *model) settle(t *rapid.T) {
	clear(m.offline)
	for _, vm := range m.vms {
		if vm.Lock == "clone" {
			vm.Lock = ""
			m.lost[vm.VMID] = m.recordedBy(vm.VMID) == nil
		}
	}
	m.now = m.now.Add(2 * poolheal.DefaultGrace)
	m.controller(t)
	m.controller(t)
	for id, vm := range m.vms {
		owner, named := m.recordedBy(id), m.machines[vm.Name]
		if slices.Contains(m.enabled, poolheal.KindDestroyLostClone) && owner == nil && named != nil && named.VMID != 0 && !named.Deleting {
			t.Fatalf("lost clone %d of %s is still there", id, vm.Name)
		}
		if slices.Contains(m.enabled, poolheal.KindStartStopped) && owner != nil && owner.Provisioned && !owner.Deleting && !owner.HasNode &&
			!vm.Running && !owner.StoppedOnPurpose && !slices.Contains(vm.Tags, poolheal.StoppedTag) {
			t.Fatalf("VM %d of %s is provisioned and still stopped", id, owner.Name)
		}
	}
	for _, mc := range m.machines {
		if slices.Contains(m.enabled, poolheal.KindRetryDelete) && mc.Deleting && !mc.DeleteFailedSince.IsZero() {
			t.Fatalf("machine %s is still deleting after its node came back", mc.Name)
		}
	}
}

// TestPlanNeverTouchesRecordedOrInFlightVMs: over a model of capmox's
// writes (clones recorded or lost, VMs started or left stopped), an
// operator's stops, nodes going and coming, deletes and time, the actions
// Plan returns never destroy a VM a ProxmoxMachine records, one under a
// lock or younger than the grace period, or one not named after a machine
// that records another VM; never start a VM stopped on purpose or of a
// machine being deleted; and a pool left alone once the faults stop heals
// completely, for the kinds it takes. 2,000 runs.
func TestPlanNeverTouchesRecordedOrInFlightVMs(t *testing.T) {
	old := flag.Lookup("rapid.checks").Value.String()
	if err := flag.Set("rapid.checks", fmt.Sprint(max(checks, atoi(old)))); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flag.Set("rapid.checks", old) }()
	total := map[poolheal.Kind]int{}
	rapid.Check(t, func(rt *rapid.T) {
		m := newModel(rt)
		rt.Repeat(m.actions())
		m.settle(rt)
		for k, n := range m.acted {
			total[k] += n
		}
	})
	for _, k := range poolheal.Kinds {
		if total[k] == 0 {
			t.Errorf("no run took %s: the model does not reach it", k)
		}
	}
	t.Logf("actions taken over the runs: %v", total)
}

func atoi(s string) int {
	n := 0
	_, _ = fmt.Sscan(s, &n)
	return n
}
