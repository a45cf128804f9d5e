package pvefake_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// guestModel is the trivial model of guests the fake is checked against.
type guestModel struct {
	pool     map[int]string // vmid -> pool ("" none)
	template map[int]bool
	store    map[int]string // vmid -> storage of its disk
	parent   map[int]int    // linked clone on ZFS -> its template
}

func (m *guestModel) ids() []int {
	out := make([]int, 0, len(m.pool))
	for id := range m.pool {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func (m *guestModel) lowestFree() int {
	for id := 100; ; id++ {
		if _, ok := m.pool[id]; !ok {
			return id
		}
	}
}

func (m *guestModel) hasClones(id int) bool {
	for _, p := range m.parent {
		if p == id {
			return true
		}
	}
	return false
}

// TestGuestsStateMachine drives creates, template conversions, linked and
// full clones, pool moves and destroys through go-proxmox and checks the
// fake against a model: the same guests exist, each in at most its one
// pool, every disk names an existing volume, no volume outlives its guest,
// and nextid is the lowest free VMID.
func TestGuestsStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		srv, err := pvefake.New()
		if err != nil {
			rt.Fatal(err)
		}
		defer srv.Close()
		for _, p := range []string{"a", "b"} {
			if err := srv.AddPool(p, "", nil, nil); err != nil {
				rt.Fatal(err)
			}
		}
		if err := srv.AddStorage(pvefake.StorageSpec{ID: "tank", Type: "zfspool", Content: []string{"images"}}); err != nil {
			rt.Fatal(err)
		}
		c := client(srv, srv.RootTokenID, srv.RootSecret)
		g := &guestMachine{srv: srv, c: c, node: c.NodeRef("pve"), vmid: rapid.IntRange(100, 112),
			m: &guestModel{pool: map[int]string{}, template: map[int]bool{}, store: map[int]string{}, parent: map[int]int{}}}
		rt.Repeat(map[string]func(*rapid.T){"create": g.create, "template": g.template, "clone": g.clone,
			"move": g.move, "destroy": g.destroy, "": func(rt *rapid.T) { checkGuests(rt, srv, c, g.m) }})
	})
}

type guestMachine struct {
	srv  *pvefake.Server
	c    *proxmox.Client
	node *proxmox.Node
	vmid *rapid.Generator[int]
	m    *guestModel
}

func (g *guestMachine) create(rt *rapid.T) {
	id, pool := g.vmid.Draw(rt, "vmid"), rapid.SampledFrom([]string{"", "a", "b"}).Draw(rt, "pool")
	store := rapid.SampledFrom([]string{"local-lvm", "tank"}).Draw(rt, "storage")
	opts := []proxmox.VirtualMachineOption{opt("scsi0", store+":1")}
	if pool != "" {
		opts = append(opts, opt("pool", pool))
	}
	_, exists := g.m.pool[id]
	err := wait(g.node.NewVirtualMachine(ctx, id, opts...))
	expect(rt, "create", err, !exists)
	if !exists {
		g.m.pool[id], g.m.store[id] = pool, store
	}
}

func (g *guestMachine) template(rt *rapid.T) {
	id, ok := pick(rt, g.m, func(id int) bool { return !g.m.template[id] })
	if !ok {
		return // no plain guest
	}
	expect(rt, "template", wait(g.node.VirtualMachineRef(id).ConvertToTemplate(ctx)), true)
	g.m.template[id] = true
}

func (g *guestMachine) clone(rt *rapid.T) {
	src, ok := pick(rt, g.m, func(int) bool { return true })
	if !ok {
		return // no guest
	}
	newid, full := g.vmid.Draw(rt, "newid"), rapid.Bool().Draw(rt, "full")
	var upid proxmox.UPID
	err := g.c.Post(ctx, "/nodes/pve/qemu/"+strconv.Itoa(src)+"/clone", map[string]any{"newid": newid, "full": full}, &upid)
	if err == nil {
		err = wait(proxmox.NewTask(upid, g.c), nil)
	}
	_, taken := g.m.pool[newid]
	expect(rt, "clone", err, !taken && (full || g.m.template[src]))
	if err == nil {
		g.m.pool[newid], g.m.store[newid] = "", g.m.store[src]
		if !full && g.m.store[src] == "tank" {
			g.m.parent[newid] = src
		}
	}
}

func (g *guestMachine) move(rt *rapid.T) {
	id, ok := pick(rt, g.m, func(int) bool { return true })
	if !ok {
		return // no guest
	}
	pool := rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "pool")
	err := g.c.Put(ctx, "/pools", map[string]any{"poolid": pool, "vms": id, "allow-move": 1}, nil)
	expect(rt, "move", err, g.m.pool[id] != pool)
	g.m.pool[id] = pool
}

func (g *guestMachine) destroy(rt *rapid.T) {
	id, ok := pick(rt, g.m, func(int) bool { return true })
	if !ok {
		return // no guest
	}
	err := wait(g.node.VirtualMachineRef(id).Delete(ctx, nil))
	expect(rt, "destroy", err, !g.m.hasClones(id))
	if err == nil {
		delete(g.m.pool, id)
		delete(g.m.template, id)
		delete(g.m.store, id)
		delete(g.m.parent, id)
	}
}

func pick(rt *rapid.T, m *guestModel, ok func(int) bool) (int, bool) {
	var ids []int
	for _, id := range m.ids() {
		if ok(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0, false
	}
	return rapid.SampledFrom(ids).Draw(rt, "guest"), true
}

func expect(rt *rapid.T, what string, err error, succeed bool) {
	if succeed && err != nil {
		rt.Fatalf("%s must succeed: %v", what, err)
	}
	if !succeed && err == nil {
		rt.Fatalf("%s must fail", what)
	}
}

func checkGuests(rt *rapid.T, srv *pvefake.Server, c *proxmox.Client, m *guestModel) {
	vols := map[string]int{}
	for _, v := range srv.Volumes() {
		vols[v.VolID] = v.Owner
		if _, ok := m.pool[v.Owner]; v.Content == "images" && !ok {
			rt.Fatalf("volume %s outlived guest %d", v.VolID, v.Owner)
		}
	}
	pools := srv.AccessConfig().Pools
	for _, id := range m.ids() {
		conf, _, ok := srv.VMConfig(id)
		if !ok {
			rt.Fatalf("guest %d is missing", id)
		}
		disk := strings.SplitN(conf["scsi0"], ",", 2)[0]
		if _, ok := vols[disk]; !ok {
			rt.Fatalf("guest %d's disk %s names no volume", id, disk)
		}
		var in []string
		for name, p := range pools {
			if slices.Contains(p.VMs, id) {
				in = append(in, name)
			}
		}
		want := []string{}
		if m.pool[id] != "" {
			want = []string{m.pool[id]}
		}
		if !slices.Equal(in, want) && (len(in) != 0 || len(want) != 0) {
			rt.Fatalf("guest %d is in pools %v, want %v", id, in, want)
		}
	}
	cl, err := c.Cluster(ctx)
	if err != nil {
		rt.Fatal(err)
	}
	if next, err := cl.NextID(ctx); err != nil || next != m.lowestFree() {
		rt.Fatalf("nextid = %d (%v), want %d", next, err, m.lowestFree())
	}
}
