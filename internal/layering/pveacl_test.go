package layering_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPveaclModelStandardLibraryOnly: the permission model and the
// user.cfg reader and writer pull in nothing from outside the standard
// library but termsafe, no package of pveacl/... pulls in a Kubernetes
// package or pvefake (the API fake imports pveacl's evaluator, so the tie
// runs one way), and only the live reader and applier (liveacl) pulls in
// pveapi (which imports the model's identifier grammar).
func TestPveaclModelStandardLibraryOnly(t *testing.T) {
	allowed := []string{module + "/pveacl", module + "/pveacl/usercfg", module + "/termsafe"}
	for _, p := range nonStandard(t, module+"/pveacl", module+"/pveacl/usercfg") {
		if !slices.Contains(allowed, p) {
			t.Errorf("the pveacl model must import only the standard library and termsafe, but it pulls in %s", p)
		}
	}
	for _, p := range nonStandard(t, module+"/pveacl/...") {
		if strings.HasPrefix(p, "k8s.io/") {
			t.Errorf("pveacl/... must not import Kubernetes packages, but it pulls in %s", p)
		}
		if p == module+"/pvefake" || strings.HasPrefix(p, module+"/pveapi/") {
			t.Errorf("pveacl/... must not import %s: pvefake imports pveacl, and the tie runs one way", p)
		}
	}
	model := []string{module + "/pveacl", module + "/pveacl/usercfg", module + "/pveacl/tenantplan", module + "/pveacl/audit", module + "/pveacl/permvec"}
	for _, p := range nonStandard(t, model...) {
		if p == module+"/pveapi" {
			t.Errorf("the pveacl model and planners must not import pveapi (only liveacl reads the API), but they pull it in")
		}
	}
}

// TestPveaclExportedNames runs the block of docs/pveacl.md that counts
// the exported names of each pveacl package and compares its output with
// the counts the page records.
func TestPveaclExportedNames(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(t, filepath.Join(root, "docs", "pveacl.md"))
	for i, b := range blocks {
		if b.info != "sh" || !strings.Contains(b.body, "go doc -all") {
			continue
		}
		if i+1 == len(blocks) || blocks[i+1].info != "text" {
			t.Fatalf("docs/pveacl.md:%d: the count has no text block after it", b.line)
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.body)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOPROXY=off")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("docs/pveacl.md:%d: %s\n%v", b.line, b.body, stderr(err))
		}
		if got, want := strings.TrimSpace(string(out)), strings.TrimSpace(blocks[i+1].body); got != want {
			t.Errorf("docs/pveacl.md:%d: the exported names are now\n%s\nthe page records\n%s", b.line, got, want)
		}
		return
	}
	t.Fatal("docs/pveacl.md shows no block counting the exported names")
}

// TestPveapitestNamesTheFake: the old import path of the Proxmox VE API
// fake, pveapi/pveapitest, names every exported constant, type and
// function of pvefake, so a test written against it keeps compiling.
func TestPveapitestNamesTheFake(t *testing.T) {
	names := func(pkg string) []string {
		out, err := exec.Command("go", "doc", "-short", pkg).Output()
		if err != nil {
			t.Fatalf("go doc -short %s: %v", pkg, stderr(err))
		}
		var ns []string
		for _, line := range strings.Split(string(out), "\n") {
			// Constructors stand indented under their types; methods
			// come with their types.
			if f := strings.Fields(line); len(f) > 1 && !strings.HasPrefix(f[1], "(") {
				ns = append(ns, f[0]+" "+strings.FieldsFunc(f[1], func(r rune) bool { return r == '(' || r == '[' })[0])
			}
		}
		slices.Sort(ns)
		return ns
	}
	fake, old := names(module+"/pvefake"), names(module+"/pveapi/pveapitest")
	for _, n := range fake {
		if !slices.Contains(old, n) {
			t.Errorf("pveapi/pveapitest does not name pvefake's %s", n)
		}
	}
}
