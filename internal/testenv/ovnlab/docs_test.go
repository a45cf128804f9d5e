//go:build linux

package ovnlab_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
)

// checkDocVersion fails t unless docs/ovngateway.md names the OVN version
// this machine runs (the first line of `ovn-nbctl --version`), since its
// flows and figures were measured on that version.
func checkDocVersion(t *testing.T, lab *ovnlab.Lab) {
	t.Helper()
	first, _, _ := strings.Cut(lab.NBCtl("--version"), "\n")
	version := strings.TrimSpace(strings.TrimPrefix(first, "ovn-nbctl"))
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "ovngateway.md"))
	if err != nil {
		t.Fatal(err)
	}
	if version == "" || !strings.Contains(string(b), "OVN "+version+" (`ovn-nbctl --version`)") {
		t.Errorf("docs/ovngateway.md records the data plane of another OVN than this machine's %q: measure again and update it", first)
	}
}

// docFlows returns the logical flows docs/ovngateway.md shows in the text
// block that follows the marker "<!-- lflows:<name> -->".
func docFlows(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "ovngateway.md"))
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- lflows:" + name + " -->"
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("docs/ovngateway.md has no %s", marker)
	}
	_, rest, ok = strings.Cut(rest, "```text\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatalf("docs/ovngateway.md: no ```text block after %s", marker)
	}
	var flows []string
	for _, line := range strings.Split(block, "\n") {
		if f := strings.Join(strings.Fields(line), " "); f != "" {
			flows = append(flows, f)
		}
	}
	return flows
}

// checkDocFlows fails t unless every flow the docs show under name is one
// of the live flows, compared with runs of spaces collapsed.
func checkDocFlows(t *testing.T, name string, live []string) {
	t.Helper()
	have := map[string]bool{}
	for _, f := range live {
		have[strings.Join(strings.Fields(f), " ")] = true
	}
	for _, f := range docFlows(t, name) {
		if !have[f] {
			t.Errorf("docs/ovngateway.md shows the flow %q (%s), which OVN does not have; live flows:\n%s", f, name, strings.Join(live, "\n"))
		}
	}
}

// checkDocLine fails t unless docs/ovngateway.md shows line, a result the
// test has just measured, on a line of its own.
func checkDocLine(t *testing.T, line string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "ovngateway.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(b), "\n"+line+"\n") {
		t.Errorf("docs/ovngateway.md does not show the measured line %q: update it", line)
	}
}
