package talostemplate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

func TestPerNode(t *testing.T) {
	s := testSpec(t, talostemplate.DefaultFactoryURL, 9000, "")
	specs, err := talostemplate.PerNode(s, []string{"pve3", "pve1", "pve2"})
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range specs {
		node := fmt.Sprintf("pve%d", i+1)
		want := "cozystack,node-" + node + ",schematic-ce4c9805,talos,talos-v1.13.6"
		if got.VMID != 9000+i || got.Node != node || strings.Join(got.Tags, ",") != want {
			t.Errorf("template %d: VMID %d node %s tags %v; want %d, %s, %s", i, got.VMID, got.Node, got.Tags, 9000+i, node, want)
		}
		if shared := strings.Join(got.SharedTags(), ","); shared != strings.Join(s.Tags, ",") {
			t.Errorf("template %d: shared tags %s, want %v", i, shared, s.Tags)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("template %d: %v", i, err)
		}
		prog, err := talostemplate.Program(got)
		if err != nil || !strings.Contains(prog, "case \"$node\" in\n'"+node+"') VMID="+fmt.Sprint(9000+i)+" TAGS='cozystack;node-"+node+";schematic-ce4c9805;talos;talos-v1.13.6' ;;\n*) echo") {
			t.Errorf("template %d: the program must build only on %s: %v\n%s", i, node, err, prog)
		}
		snippet := talostemplate.PoolSnippet(got)
		if !strings.Contains(snippet, "  localTemplates: true\n") || strings.Contains(snippet, "node-") {
			t.Errorf("template %d: the pool snippet asks for local templates and lists the shared tags:\n%s", i, snippet)
		}
	}
	want := `talos:
  version: "v1.13.6"
  schematicID: "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
proxmox:
  localTemplates: true
  templateTags:
    - "cozystack"
    - "schematic-ce4c9805"
    - "talos"
    - "talos-v1.13.6"
  allowedNodes:
    - "pve1"
    - "pve2"
    - "pve3"
`
	if got := talostemplate.PerNodePoolSnippet(specs); got != want {
		t.Errorf("the pool snippet of each node's template:\n%s\nwant:\n%s", got, want)
	}
	refusals := map[string]struct {
		nodes []string
		spec  func(*talostemplate.Spec)
		want  string
	}{
		"NoNodes":   {want: "no node is given for the templates of each node's local storage"},
		"CaseTwins": {nodes: []string{"pve1", "PVE1"}, want: "is listed twice"},
		"BadName":   {nodes: []string{"pve_1"}, want: "node pve_1 is not a Proxmox VE node name"},
		"Overflow":  {nodes: []string{"a", "b"}, spec: func(s *talostemplate.Spec) { s.VMID = 999_999_999 }, want: "the 2 templates take the VMIDs 999999999 to 1000000000"},
		"HasNode":   {nodes: []string{"a"}, spec: func(s *talostemplate.Spec) { s.Node = "pve1" }, want: "the spec already names node pve1"},
	}
	for name, tc := range refusals {
		in := s
		if tc.spec != nil {
			tc.spec(&in)
		}
		_, err := talostemplate.PerNode(in, tc.nodes)
		if !errors.Is(err, talostemplate.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want %q, got %v", name, tc.want, err)
		}
	}
}

func TestNodeTagRules(t *testing.T) {
	_, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: "9000", Storage: "local-lvm", TalosVersion: talosVersion, SchematicID: agentSchematic, Tags: "talos,node-pve1"})
	if !errors.Is(err, talostemplate.ErrInvalidSpec) || !strings.Contains(err.Error(), "template tag node-pve1 is a node tag, which only a template of one node's local storage carries") {
		t.Errorf("a node tag asked for by hand: %v", err)
	}
	s := testSpec(t, talostemplate.DefaultFactoryURL, 9000, "talos,pool-a")
	s.Node = "pve1"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "the template of node pve1 lacks its node tag node-pve1") {
		t.Errorf("a node's template without its tag: %v", err)
	}
	s.Tags = []string{"node-pve2", "pool-a", "talos"}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "template tag node-pve2 names another node than the template's (pve1)") {
		t.Errorf("a node's template with another node's tag: %v", err)
	}
}

// TestCreatePerNode builds each node's template on its own node's
// local-lvm (a storage of every node, not shared) and checks that a
// linked clone of each works on its node and is refused on another, as
// qemu-server refuses it.
func TestCreatePerNode(t *testing.T) {
	factory := newFactory(t)
	srv := pvefake.NewServer(t, pvefake.WithNodes("pve1", "pve2", "pve3"))
	nodes, err := talostemplate.ClusterNodes(context.Background(), srv.Client())
	if err != nil || strings.Join(nodes, ",") != "pve1,pve2,pve3" {
		t.Fatalf("ClusterNodes: %v, %v", nodes, err)
	}
	specs, err := talostemplate.PerNode(testSpec(t, factory.URL, 9000, ""), nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if _, err := talostemplate.Create(context.Background(), srv.Client(), s, fastOpts()); err != nil {
			t.Fatalf("Create %d on %s: %v", s.VMID, s.Node, err)
		}
		conf, node, _ := srv.VMConfig(s.VMID)
		if node != s.Node || conf["tags"] != talostemplate.PVETags(s.Tags) || !strings.HasPrefix(conf["scsi0"], "local-lvm:base-") {
			t.Errorf("template %d: node %s, config %v", s.VMID, node, conf)
		}
	}
	opts := fastOpts()
	opts.Node = "pve1"
	if _, err := talostemplate.Create(context.Background(), srv.Client(), specs[1], opts); err == nil || !strings.Contains(err.Error(), "the template of node pve2, on its local storage, is built on that node, not on pve1") {
		t.Errorf("a node's template built elsewhere: %v", err)
	}
	var upid string
	if err := srv.Client().Post(context.Background(), "/nodes/pve1/qemu/9000/clone", map[string]any{"newid": 101, "target": "pve2"}, &upid); err == nil ||
		!strings.Contains(err.Error(), "can't clone VM to node 'pve2' (VM uses local storage)") {
		t.Errorf("a clone of pve1's template to pve2: %v", err)
	}
}
