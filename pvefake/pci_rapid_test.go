package pvefake_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// The devices of the machine's mappings per node; a raw host value names
// one of them directly.
var (
	pciItems = map[string]map[string][]string{
		"gpu": {"pve1": {"0000:01:00.0", "0000:02:00.0"}, "pve2": {"0000:01:00.0"}},
		"nic": {"pve1": {"0000:03:00.0"}, "pve3": {"0000:03:00.0"}},
	}
	pciNodes = []string{"pve1", "pve2", "pve3"}
)

// pciVM is the model of a guest.
type pciVM struct {
	node    string
	conf    map[string]string // hostpci0 and hostpci1
	running bool
	// holds are the devices it took at its start, by option; started is
	// its configuration then (a later change waits for the next start, as
	// PVE keeps it pending).
	holds   map[string]string
	started map[string]string
	ha      string // the HA resource's requested state, "" without one
}

type pciModel struct {
	vms     map[int]*pciVM
	offline string // the node that is offline, "" for none
	fenced  bool
}

// holder returns the running guest other than vmid holding id on node.
func (m *pciModel) holder(node, id string, vmid int) int {
	for other, vm := range m.vms {
		if other != vmid && vm.running && vm.node == node && slices.Contains(slices.Collect(maps.Values(vm.holds)), id) {
			return other
		}
	}
	return 0
}

// take is qemu-server's choice of devices for a start of vmid on node, or
// false when the start fails.
func (m *pciModel) take(vmid int, node string) (map[string]string, bool) {
	vm := m.vms[vmid]
	used := map[string]bool{}
	out := map[string]string{}
	for _, k := range []string{"hostpci0", "hostpci1"} {
		v := vm.conf[k]
		if v == "" {
			continue
		}
		var alts []string
		if name, ok := strings.CutPrefix(v, "mapping="); ok {
			alts = pciItems[name][node]
			if len(alts) == 0 {
				return nil, false // PCI device mapping not found
			}
		} else {
			alts = []string{v}
		}
		if len(alts) == 1 {
			if used[alts[0]] {
				return nil, false // assigned more than once
			}
			out[k] = alts[0]
			used[alts[0]] = true
			continue
		}
		for _, id := range alts {
			if !used[id] && m.holder(node, id, vmid) == 0 {
				out[k] = id
				used[id] = true
				break
			}
		}
		if out[k] == "" {
			return nil, false // could not find a free device
		}
	}
	for _, id := range out {
		if m.holder(node, id, vmid) != 0 {
			return nil, false // already in use
		}
	}
	return out, true
}

// start runs a stopped guest if its devices can be taken.
func (m *pciModel) start(vmid int) {
	vm := m.vms[vmid]
	if vm.running || vm.node == m.offline {
		return
	}
	if holds, ok := m.take(vmid, vm.node); ok {
		vm.running, vm.holds, vm.started = true, holds, maps.Clone(vm.conf)
	}
}

func (m *pciModel) stop(vm *pciVM) { vm.running, vm.holds = false, nil }

func (m *pciModel) ids() []int { return slices.Sorted(maps.Keys(m.vms)) }

// TestPCIStateMachine drives creates, starts, stops, destroys, hostpci
// changes, HA management, and the loss, fencing (the HA services recovered
// to another node and started there) and return of a node, and checks the
// fake against a model after each step: no PCI device is held by two
// running guests, a device is held only by a running guest whose
// configuration (as it started) names its mapping or the device, and each
// guest runs, where and with the devices the model says.
func TestPCIStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clk := &clock{now: time.Unix(1_800_000_000, 0)}
		srv, err := pvefake.New(pvefake.WithCluster("lab"), pvefake.WithNodes(pciNodes...), pvefake.WithClock(clk.Now),
			pvefake.WithHAFenceDelay(time.Minute))
		if err != nil {
			rt.Fatal(err)
		}
		defer srv.Close()
		for _, name := range []string{"gpu", "nic"} {
			var items []string
			for _, n := range pciNodes {
				for _, p := range pciItems[name][n] {
					items = append(items, "node="+n+",path="+p+",id=10de:2204")
				}
			}
			if err := srv.AddPCIMapping(pvefake.PCIMappingSpec{ID: name, Map: items}); err != nil {
				rt.Fatal(err)
			}
		}
		p := &pciMachine{srv: srv, c: client(srv, srv.RootTokenID, srv.RootSecret), clk: clk, m: &pciModel{vms: map[int]*pciVM{}}}
		rt.Repeat(map[string]func(*rapid.T){"create": p.create, "seed": p.seed, "start": p.start, "stop": p.stop,
			"destroy": p.destroy, "set": p.set, "ha": p.ha, "lose": p.lose, "fence": p.fence, "return": p.back, "": p.check})
	})
}

type pciMachine struct {
	srv *pvefake.Server
	c   *proxmox.Client
	clk *clock
	m   *pciModel
}

var (
	mappedValues = []string{"", "mapping=gpu", "mapping=nic"}
	anyValues    = []string{"", "mapping=gpu", "mapping=nic", "0000:01:00.0", "0000:03:00.0"}
)

func (p *pciMachine) newID(rt *rapid.T) (int, bool) {
	id := rapid.IntRange(100, 107).Draw(rt, "vmid")
	_, exists := p.m.vms[id]
	return id, !exists
}

func (p *pciMachine) create(rt *rapid.T) {
	id, free := p.newID(rt)
	node := rapid.SampledFrom(pciNodes).Draw(rt, "node")
	conf := map[string]string{}
	body := map[string]any{"vmid": id}
	for _, k := range []string{"hostpci0", "hostpci1"} {
		if v := rapid.SampledFrom(mappedValues).Draw(rt, k); v != "" {
			conf[k], body[k] = v, v
		}
	}
	var upid proxmox.UPID
	err := p.c.Post(ctx, "/nodes/"+node+"/qemu", body, &upid)
	if err == nil {
		err = wait(proxmox.NewTask(upid, p.c), nil)
	}
	expect(rt, "create", err, free && node != p.m.offline)
	if err == nil {
		p.m.vms[id] = &pciVM{node: node, conf: conf}
	}
}

// seed adds a guest with any hostpci values, host devices too, which only
// root@pam (not a token) may set through the API.
func (p *pciMachine) seed(rt *rapid.T) {
	id, free := p.newID(rt)
	if !free {
		return
	}
	node := rapid.SampledFrom(pciNodes).Draw(rt, "node")
	conf := map[string]string{}
	for _, k := range []string{"hostpci0", "hostpci1"} {
		if v := rapid.SampledFrom(anyValues).Draw(rt, k); v != "" {
			conf[k] = v
		}
	}
	if err := p.srv.AddVM(pvefake.VMSpec{VMID: id, Node: node, Config: maps.Clone(conf)}); err != nil {
		rt.Fatal(err)
	}
	p.m.vms[id] = &pciVM{node: node, conf: conf}
}

func (p *pciMachine) pick(rt *rapid.T) (int, *pciVM, bool) {
	ids := p.m.ids()
	if len(ids) == 0 {
		return 0, nil, false
	}
	id := rapid.SampledFrom(ids).Draw(rt, "guest")
	return id, p.m.vms[id], true
}

func (p *pciMachine) vm(vm *pciVM, id int) *proxmox.VirtualMachine {
	return p.c.NodeRef(vm.node).VirtualMachineRef(id)
}

func (p *pciMachine) start(rt *rapid.T) {
	id, vm, ok := p.pick(rt)
	if !ok {
		return
	}
	err := wait(p.vm(vm, id).Start(ctx))
	if vm.node == p.m.offline {
		expect(rt, "start on a lost node", err, false)
		return
	}
	if vm.ha != "" {
		expect(rt, "hastart", err, true) // the LRM's start may fail, the request does not
		vm.ha = "started"
		p.m.start(id)
		return
	}
	_, want := p.m.take(id, vm.node)
	expect(rt, "start", err, !vm.running && want)
	p.m.start(id)
}

func (p *pciMachine) stop(rt *rapid.T) {
	id, vm, ok := p.pick(rt)
	if !ok {
		return
	}
	err := wait(p.vm(vm, id).Stop(ctx))
	expect(rt, "stop", err, vm.node != p.m.offline)
	if err == nil {
		if vm.ha != "" {
			vm.ha = "stopped"
		}
		p.m.stop(vm)
	}
}

func (p *pciMachine) destroy(rt *rapid.T) {
	id, vm, ok := p.pick(rt)
	if !ok {
		return
	}
	err := wait(p.vm(vm, id).Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true}))
	expect(rt, "destroy", err, vm.node != p.m.offline && !vm.running)
	if err == nil {
		delete(p.m.vms, id)
	}
}

// set changes or removes hostpci0 through the API: a host device, new or
// old, is refused to the root token.
func (p *pciMachine) set(rt *rapid.T) {
	id, vm, ok := p.pick(rt)
	if !ok {
		return
	}
	v := rapid.SampledFrom(anyValues).Draw(rt, "value")
	body := map[string]any{"hostpci0": v}
	if v == "" {
		body = map[string]any{"delete": "hostpci0"}
	}
	err := p.c.Put(ctx, "/nodes/"+vm.node+"/qemu/"+strconv.Itoa(id)+"/config", body, nil)
	host := func(s string) bool { return s != "" && !strings.HasPrefix(s, "mapping=") }
	expect(rt, "set hostpci0", err, vm.node != p.m.offline && !host(v) && !host(vm.conf["hostpci0"]))
	if err == nil {
		if v == "" {
			delete(vm.conf, "hostpci0")
		} else {
			vm.conf["hostpci0"] = v
		}
	}
}

// ha makes a guest an HA resource (requested state started), which starts
// it.
func (p *pciMachine) ha(rt *rapid.T) {
	id, vm, ok := p.pick(rt)
	if !ok || vm.ha != "" || vm.node == p.m.offline {
		return
	}
	err := p.c.Post(ctx, "/cluster/ha/resources", map[string]any{"sid": "vm:" + strconv.Itoa(id)}, nil)
	expect(rt, "ha", err, true)
	vm.ha = "started"
	p.m.start(id)
}

// lose takes a node out of the cluster: its guests stop.
func (p *pciMachine) lose(rt *rapid.T) {
	if p.m.offline != "" {
		return
	}
	node := rapid.SampledFrom(pciNodes).Draw(rt, "node")
	if err := p.srv.SetNodeOnline(node, false); err != nil {
		rt.Fatal(err)
	}
	p.m.offline, p.m.fenced = node, false
	for _, vm := range p.m.vms {
		if vm.node == node {
			p.m.stop(vm)
		}
	}
}

// fence lets the fence delay pass: the HA services of the lost node move
// to the node the HA manager picks (which the model reads) and those
// requested started start there, in SID order.
func (p *pciMachine) fence(rt *rapid.T) {
	if p.m.offline == "" || p.m.fenced {
		return
	}
	p.clk.Add(2 * time.Minute)
	p.srv.NodeOnline(p.m.offline) // a look at the state runs the manager
	p.m.fenced = true
	for _, id := range p.m.ids() {
		vm := p.m.vms[id]
		if vm.ha == "" || vm.node != p.m.offline {
			continue
		}
		_, node, _ := p.srv.VMRunning(id)
		if node == p.m.offline {
			rt.Fatalf("HA service vm:%d was not recovered from %s", id, node)
		}
		vm.node = node
		if vm.ha == "started" {
			p.m.start(id)
		}
	}
}

// back returns the lost node; the HA manager starts every service
// requested started that is not running.
func (p *pciMachine) back(rt *rapid.T) {
	if p.m.offline == "" {
		return
	}
	if err := p.srv.SetNodeOnline(p.m.offline, true); err != nil {
		rt.Fatal(err)
	}
	p.m.offline = ""
	for _, id := range p.m.ids() {
		if p.m.vms[id].ha == "started" {
			p.m.start(id)
		}
	}
}

func (p *pciMachine) check(rt *rapid.T) {
	type dev struct{ node, path string }
	holder := map[dev]int{}
	for _, id := range p.m.ids() {
		vm := p.m.vms[id]
		running, node, ok := p.srv.VMRunning(id)
		if !ok || running != vm.running || node != vm.node {
			rt.Fatalf("VM %d: running %v on %s (exists %v), want running %v on %s", id, running, node, ok, vm.running, vm.node)
		}
		conf, _, _ := p.srv.VMConfig(id)
		for _, k := range []string{"hostpci0", "hostpci1"} {
			if conf[k] != vm.conf[k] {
				rt.Fatalf("VM %d: %s = %q, want %q", id, k, conf[k], vm.conf[k])
			}
		}
		got := map[string]string{}
		for _, d := range p.srv.VMPCIDevices(id) {
			got[d.Key] = d.Path
			if !running || d.Node != node {
				rt.Fatalf("VM %d holds %s on %s while running %v on %s", id, d.Path, d.Node, running, node)
			}
			if other, taken := holder[dev{d.Node, d.Path}]; taken {
				rt.Fatalf("%s on %s is held by VMs %d and %d", d.Path, d.Node, other, id)
			}
			holder[dev{d.Node, d.Path}] = id
			named := vm.started[d.Key]
			if d.Mapping != "" && named != "mapping="+d.Mapping || d.Mapping == "" && named != d.Path {
				rt.Fatalf("VM %d holds %+v, but started with %s = %q", id, d, d.Key, named)
			}
			if maps.Equal(vm.started, vm.conf) && conf[d.Key] != named {
				rt.Fatalf("VM %d holds %+v, but its configuration names %q", id, d, conf[d.Key])
			}
		}
		if !maps.Equal(got, vm.holds) && (len(got) != 0 || len(vm.holds) != 0) {
			rt.Fatalf("VM %d holds %v, want %v", id, got, vm.holds)
		}
	}
}
