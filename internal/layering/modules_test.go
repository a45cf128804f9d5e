package layering_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nestedModules are the modules hack/test.sh tests beside the main one.
var nestedModules = []string{"charts", filepath.Join("hack", "tools")}

// compiledModules maps each module that provides a package the tests of
// the module in dir compile to its version there.
func compiledModules(t *testing.T, dir string) map[string]string {
	t.Helper()
	args := []string{"list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./..."}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: go %s: %v", dir, strings.Join(args, " "), stderr(err))
	}
	mods := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if path, version, ok := strings.Cut(line, " "); ok && version != "" {
			mods[path] = version
		}
	}
	return mods
}

// TestNestedModulesShareVersions: every module whose packages both the
// main module's tests and a nested module's compile is at the same
// version in both. The build cache keys a compiled package on its
// module's version and on those of everything it imports, so one module
// apart at the bottom (golang.org/x/sys, say) makes a first run compile
// every package above it, client-go and controller-runtime among them,
// once more for the nested module (docs/performance.md measures it).
func TestNestedModulesShareVersions(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	main := compiledModules(t, root)
	if len(main) < 50 {
		t.Fatalf("the main module's tests compile packages of %d modules, want the hundred and more it requires: %v", len(main), main)
	}
	for _, dir := range nestedModules {
		nested := compiledModules(t, filepath.Join(root, dir))
		shared := 0
		for path, version := range nested {
			mainVersion, ok := main[path]
			if !ok {
				continue
			}
			shared++
			if version != mainVersion {
				t.Errorf("%s compiles %s %s, the main module %s: run 'go get %s@<the higher>' and 'go mod tidy' in the module with the lower, so that a first run compiles its packages once for both",
					dir, path, version, mainVersion, path)
			}
		}
		if shared == 0 {
			t.Errorf("%s shares no module with the main module: its module list is wrong (%d modules)", dir, len(nested))
		}
	}
}
