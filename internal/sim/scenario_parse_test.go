package sim_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// TestParseScenarioEveryMistake: a scenario with five mistakes gets five
// lines, each once, after a count; a single mistake reads as before.
func TestParseScenarioEveryMistake(t *testing.T) {
	_, err := sim.ParseScenario([]byte(`subnetPruneTimeout: soon
steps:
- converge: true
  restart: true
- apply: {}
- advance: -1s
- delete:
  - {kind: Vlan, name: a}
  - {apiVersion: v1, kind: Namespace, name: ok}
`))
	if !errors.Is(err, sim.ErrInvalidScenario) {
		t.Fatalf("got %v, want ErrInvalidScenario", err)
	}
	want := `invalid scenario: 5 problems:
  subnetPruneTimeout "soon" is not a positive duration such as 10m
  step 1 (restart): a step does exactly one of apply, delete, restart, advance, converge or expect
  step 2 (apply): apply needs exactly one of objects or file
  step 3 (advance -1s): advance "-1s" is not a positive duration such as 30s or 10m
  step 4 (delete): delete "Vlan a" needs apiVersion, kind and name`
	if got := err.Error(); got != want {
		t.Errorf("message:\n%s\nwant:\n%s", got, want)
	}

	_, err = sim.ParseScenario([]byte("steps:\n- converge: true\n  restart: true\n"))
	if want := "invalid scenario: step 1 (restart): a step does exactly one of apply, delete, restart, advance, converge or expect"; err == nil || err.Error() != want {
		t.Errorf("one mistake: got %v, want %q", err, want)
	}
}

// FuzzParseScenario: any input parses or is refused with
// ErrInvalidScenario, and a refusal of several problems lists as many
// lines as its count says.
func FuzzParseScenario(f *testing.F) {
	for _, seed := range []string{
		"steps:\n- converge: true\n",
		"subnetPruneTimeout: 10m\nsteps:\n- advance: 30s\n- restart: true\n",
		"steps:\n- converge: true\n  restart: true\n- apply: {}\n",
		"steps:\n- delete:\n  - {kind: Vlan}\n- expect:\n  - {name: x}\n",
		"name: x\nsteps: []\n",
		"steps: [",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := sim.ParseScenario(data)
		if err != nil {
			if !errors.Is(err, sim.ErrInvalidScenario) {
				t.Fatalf("refusal %v is not ErrInvalidScenario", err)
			}
			if s != nil {
				t.Fatal("a refused scenario must not be returned")
			}
			msg := err.Error()
			var n int
			if _, scanErr := fmt.Sscanf(msg, "invalid scenario: %d problems:", &n); scanErr == nil {
				if lines := strings.Count(msg, "\n  "); lines != n {
					t.Fatalf("%d problems announced, %d listed: %q", n, lines, msg)
				}
			}
			return
		}
		if s == nil {
			t.Fatal("an accepted scenario must be returned")
		}
	})
}
