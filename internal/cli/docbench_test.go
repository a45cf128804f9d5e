package cli

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// ciBenchFlags are the test-binary flags each package's documented
// benchmarks run with in CI: the sizes the docs measure (10,000 simulated
// networks, a zone of 4,094 on a real API server, 1,000 through the
// controller binary) take an hour, so CI runs the same code on fewer.
// A package not listed runs at the size the docs show.
var ciBenchFlags = map[string][]string{
	"./internal/sim/": {"-networks=200", "-baseline-networks=50"},
	"./network/":      {"-zone-networks=512", "-previous-networks=64"},
	"./e2e":           {"-networks=50"},
}

// documentedBenchmarks returns, per package a benchmark command of the
// docs names, the -bench pattern that runs each of them once: the
// top-level benchmarks the commands name, joined.
func documentedBenchmarks(t *testing.T) map[string]string {
	t.Helper()
	names := map[string][]string{}
	for _, page := range docPages(t) {
		for _, b := range readBlocks(t, page) {
			cmds, err := commandsOf(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cmds {
				args := []string(nil)
				if dir, bin := subshellTestBinary(c.stmt); bin != nil {
					args = append([]string{"go", "test", "./" + dir}, bin...)
				} else if _, a := words(c.stmt); len(a) > 2 && a[0] == "go" && a[1] == "test" && slices.Contains(a, "-bench") {
					args = a
				}
				if args == nil {
					continue
				}
				pkgs, pattern, _ := benchArgs(args)
				first, _, _ := strings.Cut(pattern, "/")
				for _, pkg := range pkgs {
					if !strings.HasSuffix(pkg, "/") && pkg != "./e2e" {
						pkg += "/"
					}
					for _, p := range strings.Split(first, "|") {
						if !slices.Contains(names[pkg], p) {
							names[pkg] = append(names[pkg], p)
						}
					}
				}
			}
		}
	}
	out := map[string]string{}
	for pkg, ps := range names {
		out[pkg] = strings.Join(ps, "|")
	}
	return out
}

// TestDocBenchmarksRun runs every benchmark the docs name once
// (-benchtime 1x), at the CI sizes of ciBenchFlags and without the race
// detector (the suite's tests run with it; these measure), linked without
// a symbol table as hack/test.sh links the tests (a dozen test binaries
// are linked on every run) and compiled with go build's flags, whose
// packages CI has compiled already: a benchmark whose own checks fail (a resync
// that writes, a network that does not converge, a ratio it asserts) fails
// CI, and the commands that produce the docs' figures keep working. The
// figures themselves come from the full commands the docs show.
func TestDocBenchmarksRun(t *testing.T) {
	benches := documentedBenchmarks(t)
	if len(benches) < 10 {
		t.Fatalf("found the benchmarks of %d packages, want the docs' dozen: %v", len(benches), benches)
	}
	for _, pkg := range slices.Sorted(maps.Keys(benches)) {
		pattern := benches[pkg]
		t.Run(strings.Trim(pkg, "./"), func(t *testing.T) {
			args := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchtime", "1x", "-count", "1", "-timeout", "20m",
				"-ldflags=-s -w", pkg}, ciBenchFlags[pkg]...)
			cmd := exec.CommandContext(t.Context(), "go", args...)
			cmd.Dir = repoRoot
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			ran := strings.Count(string(out), "\nBenchmark")
			if ran == 0 {
				t.Fatalf("go %s ran no benchmark:\n%s", strings.Join(args, " "), out)
			}
			t.Logf("%d benchmark(s) of %s in %s", ran, pkg, time.Since(start).Round(time.Second))
		})
	}
}
