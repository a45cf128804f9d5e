package pveapitest_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi/pveapitest"
)

// TestClusterResourcesOrder: guests are listed in Perl's string order of
// their VMIDs, as pve-manager's resources method sorts the keys of the
// VM list, so capmox's bestSubset template choice (which depends on the
// order) meets the same list it meets on PVE.
func TestClusterResourcesOrder(t *testing.T) {
	srv, root := start(t)
	for _, id := range []int{9000, 101, 10000, 100, 1000} {
		must(t, srv.AddVM(pveapitest.VMSpec{VMID: id}))
	}
	for _, path := range []string{"/cluster/resources?type=vm", "/cluster/resources"} {
		var list proxmox.ClusterResources
		must(t, root.Get(ctx, path, &list))
		var got []uint64
		for _, r := range list {
			if r.Type == "qemu" {
				got = append(got, r.VMID)
			}
		}
		if diff := cmp.Diff([]uint64{100, 1000, 10000, 101, 9000}, got); diff != "" {
			t.Errorf("%s: guests in string order of their VMIDs: -want +got:\n%s", path, diff)
		}
	}
}

// TestContainerIndex: GET /nodes/{node}/lxc answers every user, as
// pve-container's vmlist does (user => 'all', filtered by VM.Audit); the
// server keeps no containers, so the list is empty, and go-proxmox's
// Containers (capmox's reservable-memory walk) decodes it.
func TestContainerIndex(t *testing.T) {
	srv, root := start(t, pveapitest.WithNodes("pve", "pve2"))
	nobody := grantee(t, srv, "nobody@pve", nil)
	for name, c := range map[string]*proxmox.Client{"root": root, "a user without privileges": nobody} {
		cts, err := c.NodeRef("pve2").Containers(ctx)
		if err != nil || len(cts) != 0 {
			t.Errorf("%s: containers of a node without any: %v, %v", name, cts, err)
		}
	}
	var list []map[string]any
	must(t, root.Get(ctx, "/nodes/pve/lxc", &list))
	if list == nil {
		t.Error("the answer is an empty JSON array, not null")
	}
	wantMessage(t, "an unknown node", root.Get(ctx, "/nodes/nope/lxc", &list), "no such cluster node 'nope'")
	if got := srv.Unserved(); len(got) != 0 {
		t.Errorf("the container index is served: %v", got)
	}
}

// nodeStatusV06 declares the fields of GET /nodes/{node}/status with the Go
// types go-proxmox v0.6.0 and v0.2.1 decode them into (types.go: Node,
// Memory, CPUInfo, RootFS, Ksm): a string where they want a number fails
// their decoding, and with it capmox's node lookup.
type nodeStatusV06 struct {
	Kversion   string
	LoadAvg    []string
	CPU        float64
	PVEVersion string
	Idle       int
	Uptime     uint64
	Wait       float64
	RootFS     struct{ Avail, Total, Free, Used uint64 }
	Swap       struct{ Used, Free, Total uint64 }
	Memory     struct{ Used, Free, Total uint64 }
	Ksm        struct{ Shared int64 }
	CPUInfo    struct {
		UserHz  int `json:"user_hz"`
		Cores   int
		Sockets int
		CPUs    int
		HVM     string
		Model   string
	}
}

// TestNodeMemory: SetNodeMemory sets what capmox's scheduler reads as a
// node's memory (R6 memory.total), and the node status decodes into the
// types go-proxmox v0.6 and v0.2.1 give it. The reservable memory capmox
// computes (total minus maxmem of the node's guests that are not templates
// and of its containers) follows.
func TestNodeMemory(t *testing.T) {
	srv, root := start(t, pveapitest.WithNodes("pve", "pve2"))
	must(t, srv.SetNodeMemory("pve", 8<<30))
	must(t, srv.AddVM(pveapitest.VMSpec{VMID: 100, Node: "pve", Config: map[string]string{"memory": "2048"}}))
	must(t, srv.AddVM(pveapitest.VMSpec{VMID: 9000, Node: "pve", Template: true, Config: map[string]string{"memory": "4096"}}))
	var raw json.RawMessage
	must(t, root.Get(ctx, "/nodes/pve/status", &raw))
	var st nodeStatusV06
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("the node status must decode into go-proxmox v0.6's types: %v\n%s", err, raw)
	}
	if st.Memory.Total != 8<<30 || st.Memory.Used+st.Memory.Free != st.Memory.Total || len(st.LoadAvg) != 3 {
		t.Errorf("memory.total is the set size, used and free add up to it, three load averages: %+v", st)
	}
	node, err := root.Node(ctx, "pve")
	must(t, err)
	vms, err := node.VirtualMachines(ctx)
	must(t, err)
	cts, err := node.Containers(ctx)
	must(t, err)
	reservable := node.Memory.Total
	for _, vm := range vms {
		if !bool(vm.Template) {
			reservable -= vm.MaxMem
		}
	}
	for _, ct := range cts {
		reservable -= ct.MaxMem
	}
	if reservable != 6<<30 {
		t.Errorf("8 GiB less the 2 GiB guest (the template does not count) leaves 6 GiB, got %d", reservable)
	}
	other, err := root.Node(ctx, "pve2")
	must(t, err)
	if other.Memory.Total != 64<<30 {
		t.Errorf("another node keeps its 64 GiB: %d", other.Memory.Total)
	}
	var list proxmox.ClusterResources
	must(t, root.Get(ctx, "/cluster/resources?type=node", &list))
	for _, r := range list {
		if r.Node == "pve" && r.MaxMem != 8<<30 {
			t.Errorf("the node's maxmem in /cluster/resources: %d", r.MaxMem)
		}
	}
	if err := srv.SetNodeMemory("nope", 1); err == nil {
		t.Error("an unknown node is refused")
	}
	if err := srv.SetNodeMemory("pve", 0); err == nil {
		t.Error("no memory at all is refused")
	}
}
