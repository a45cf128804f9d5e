package talostemplate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPerNodeProgram runs the one program of each node's template as if on
// each node (the host name a stand-in shell reports): on pve2 it builds pve2's template (its VMID, its node tag), on a
// host that is none of the nodes it stops before anything is fetched or
// made.
func TestPerNodeProgram(t *testing.T) {
	specs, err := PerNode(programSpec(t, nil), []string{"pve1", "pve2", "pve3"})
	if err != nil {
		t.Fatal(err)
	}
	program, err := PerNodeProgram(specs)
	if err != nil {
		t.Fatal(err)
	}
	on := func(host string) *node {
		n := newNode(t, clusterGuests, true)
		uname := "#!/bin/sh\necho " + host + "\n"
		if err := os.WriteFile(filepath.Join(filepath.Dir(n.state), "bin", "uname"), []byte(uname), 0o755); err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := on("pve2.example.org")
	if _, stderr, code := n.run(t, program); code != 0 {
		t.Fatalf("on pve2: exit %d: %s", code, stderr)
	}
	if conf := n.file("9001.conf"); !strings.Contains(conf, "tags: cozystack;node-pve2;schematic-ce4c9805;talos;talos-v1.13.6\n") || !strings.Contains(conf, "template: 1\n") {
		t.Errorf("on pve2 the program builds VM 9001 with pve2's tag:\n%s", conf)
	}
	if n.file("9000.conf") != "" || n.file("9002.conf") != "" {
		t.Error("on pve2 the program builds pve2's template only")
	}
	n = on("pve9")
	_, stderr, code := n.run(t, program)
	if want := "this program builds the template of node pve1, pve2, pve3, each on its own storage: run it on each of them, not on pve9\n"; code != 1 || stderr != want {
		t.Errorf("on pve9: exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
	if n.file("fetched") != "" {
		t.Error("on another host nothing is fetched")
	}
	if _, err := PerNodeProgram([]Spec{programSpec(t, nil)}); err == nil {
		t.Error("a spec without a node is no node's template")
	}
}
