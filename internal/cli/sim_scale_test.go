package cli

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// TestSimLargeScenario runs the commands of docs/sim.md on the shipped
// scale-120.yaml: a scenario of more than 100 networks prints a
// summary table (networks by state, VLANs by zone, time, reconciles,
// writes) unless --dump asks for every object; -o json prints the summary
// as JSON.
func TestSimLargeScenario(t *testing.T) {
	scenario := filepath.Join("..", "sim", "testdata", "scenarios", "scale-120.yaml")
	out, errOut, code := runSim(t, "", "sim", "-f", scenario)
	if code != 0 {
		t.Fatalf("exit code %d; stderr: %s", code, errOut)
	}
	for _, re := range []string{`(?m)^120\s+Ready$`, `(?m)^ZONE\s+NETWORKS\s+ALLOCATED\s+FREE\s+TOTAL$`, `(?m)^zone-big\s+120\s+120\s+3974\s+4094$`,
		`(?m)^TIME\s+[0-9.]+ s$`, `(?m)^RECONCILES\s+[1-9][0-9]*$`, `(?m)^WRITES\s+[1-9][0-9]*$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("the summary has no line matching %s:\n%s", re, out)
		}
	}
	out, errOut, code = runSim(t, "", "sim", "-f", scenario, "--dump", "-o", "yaml")
	if code != 0 {
		t.Fatalf("--dump: exit code %d; stderr: %s", code, errOut)
	}
	var objs []map[string]any
	if err := yaml.Unmarshal([]byte(out), &objs); err != nil {
		t.Fatalf("--dump does not print a YAML list: %v", err)
	}
	nets := 0
	for _, o := range objs {
		if o["kind"] == "ProxmoxNetwork" {
			nets++
		}
	}
	if nets != 120 {
		t.Errorf("--dump prints %d ProxmoxNetworks, want 120", nets)
	}
	out, errOut, code = runSim(t, "", "sim", "-f", scenario, "-o", "json")
	if code != 0 {
		t.Fatalf("-o json: exit code %d; stderr: %s", code, errOut)
	}
	var sum sim.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("-o json does not print the summary: %v\n%s", err, out)
	}
	if sum.Networks["Ready"] != 120 || len(sum.Zones) != 1 || sum.Zones[0].Allocated != 120 {
		t.Errorf("-o json summary: %+v, want 120 networks Ready and 120 VLANs allocated in one zone", sum)
	}
}
