package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func runSim(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runIn(t, stdin, args...)
}

func TestSimCommand(t *testing.T) {
	failing := "steps:\n- apply:\n    objects: |\n      apiVersion: v1\n      kind: Namespace\n      metadata: {name: tenant-a}\n" +
		"- converge: true\n- expect:\n  - {apiVersion: v1, kind: Namespace, name: tenant-b}\n"
	cases := map[string]struct {
		reason  string
		args    []string
		stdin   string
		code    int
		out     func(t *testing.T, out string)
		errWant string
	}{
		"Lifecycle": {
			reason: "the shipped scenario runs clean and prints the final objects as YAML",
			args:   []string{"sim", "-f", filepath.Join("..", "sim", "testdata", "scenarios", "lifecycle.yaml")},
			out: func(t *testing.T, out string) {
				var objs []map[string]any
				if err := yaml.Unmarshal([]byte(out), &objs); err != nil {
					t.Fatalf("output is not a YAML list: %v", err)
				}
				kinds := map[string]int{}
				for _, o := range objs {
					kinds[o["kind"].(string)]++
				}
				want := map[string]int{"Namespace": 2, "ProviderNetwork": 1, "ProxmoxNetworkZone": 1, "ProxmoxNetwork": 3,
					"ProxmoxVLANClaim": 3, "Vlan": 3, "Subnet": 3, "InClusterIPPool": 3}
				if diff := cmp.Diff(want, kinds); diff != "" {
					t.Errorf("final objects by kind: -want +got:\n%s", diff)
				}
			},
		},
		"FailedExpectation": {
			reason:  "an expectation that does not hold is printed and exits 1",
			args:    []string{"sim", "-f", "-"},
			stdin:   failing,
			code:    1,
			errWant: "FAIL step 3 (expect): Namespace tenant-b does not exist",
		},
		"BadScenario": {
			reason:  "a step that does two things is refused with the reason",
			args:    []string{"sim", "-f", "-"},
			stdin:   "steps:\n- converge: true\n  restart: true\n",
			code:    1,
			errWant: "a step does exactly one of apply, delete, restart, advance, converge or expect",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runSim(t, tc.stdin, tc.args...)
			if code != tc.code {
				t.Fatalf("%s: exit code %d, want %d; stderr: %s", tc.reason, code, tc.code, errOut)
			}
			if tc.out != nil {
				tc.out(t, out)
			}
			if !strings.Contains(errOut, tc.errWant) {
				t.Errorf("%s: stderr %q does not contain %q", tc.reason, errOut, tc.errWant)
			}
		})
	}
	if _, err := os.Stat(filepath.Join("..", "..", "docs", "sim.md")); err != nil {
		t.Errorf("the scenario format must be documented in docs/sim.md: %v", err)
	}
}
