package talostemplate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

func TestSelectPerNode(t *testing.T) {
	rs := []talostemplate.VMResource{
		{VMID: 9000, Name: "t", Node: "pve1", Template: 1, Tags: "cozystack;node-pve1;talos"},
		{VMID: 9001, Name: "t", Node: "pve2", Template: 1, Tags: "cozystack;node-pve2;talos"},
		{VMID: 9002, Name: "t", Node: "pve1", Template: 1, Tags: "cozystack;node-pve3;talos"},
		{VMID: 101, Name: "w", Node: "pve3", Tags: "cozystack;talos"},
	}
	for _, v := range []talostemplate.CapmoxVersion{talostemplate.CapmoxV07, talostemplate.CapmoxV08} {
		sels, err := talostemplate.SelectPerNode(rs, []string{"cozystack", "talos"}, []string{"pve1", "pve2", "pve3", "pve4"}, talostemplate.SelectOptions{Capmox: v})
		if len(sels) != 4 {
			t.Fatalf("%s: %d selections", v, len(sels))
		}
		for i, want := range []int{9000, 9001} {
			if s := sels[i]; s.Template == nil || s.Template.VMID != want || s.Error != "" {
				t.Errorf("%s: node %s clones %v, error %q; want %d", v, s.Node, s.Template, s.Error, want)
			}
		}
		if s := sels[2]; !strings.Contains(s.Error, "template 9002 (t) carries the tag of node pve3 but sits on node pve1") ||
			!strings.Contains(s.Error, "can't clone VM to node 'pve3' (VM uses local storage)") {
			t.Errorf("%s: pve3's template on pve1: %q", v, s.Error)
		}
		if s := sels[3]; s.Template != nil || !strings.Contains(s.Error, "found 0 VM templates with tags") || !strings.Contains(s.Error, "node-pve4") {
			t.Errorf("%s: no template for pve4: %q", v, s.Error)
		}
		if !errors.Is(err, talostemplate.ErrOtherNode) || !errors.Is(err, talostemplate.ErrTemplateNotFound) {
			t.Errorf("%s: the error joins pve3's and pve4's: %v", v, err)
		}
	}
	sels, err := talostemplate.SelectPerNode(rs[:2], []string{"cozystack", "talos"}, nil, talostemplate.SelectOptions{})
	if err != nil || len(sels) != 2 || sels[0].Node != "pve1" || sels[1].Node != "pve2" {
		t.Errorf("without nodes, the guests' nodes: %+v, %v", sels, err)
	}
	if _, err := talostemplate.SelectPerNode(rs, []string{"talos", "node-pve1"}, nil, talostemplate.SelectOptions{}); err == nil || !strings.Contains(err.Error(), "is a node tag") {
		t.Errorf("a node tag in the selector: %v", err)
	}
	// The pool's shared tags alone select none of the node templates,
	// and the explanation says what they are.
	sel, err := talostemplate.Select(rs[:2], []string{"cozystack", "talos"}, talostemplate.SelectOptions{})
	if err == nil {
		t.Fatalf("the shared tags alone select %v", sel.Template)
	}
	want := "9000 (t) on pve1, 9001 (t) on pve2 carry these tags and their node's tag: they are the templates of each node's local storage, which a pool selects with proxmox.localTemplates: true"
	if got := strings.Join(talostemplate.Explain(sel), "\n"); !strings.Contains(got, want) {
		t.Errorf("the explanation names the node templates:\n%s", got)
	}
}
