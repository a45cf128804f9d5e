package sim_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
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

// TestParseScenarioMatchesCase: a key in another case than its field is
// refused by its path, alone or next to the right one, and so is a key
// given twice; the same scenario with the right keys is admitted.
func TestParseScenarioMatchesCase(t *testing.T) {
	const control = "name: demo\nsteps:\n- converge: true\n- expect:\n  - {apiVersion: v1, kind: Namespace, name: a, absent: true}\n"
	s, err := sim.ParseScenario([]byte(control))
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	if s.Name != "demo" || len(s.Steps) != 2 || !s.Steps[1].Expect[0].Absent {
		t.Fatalf("control decoded as %+v", s)
	}
	cases := map[string]struct{ from, to, want string }{
		"MiscasedTop":    {"name: demo\n", "Name: demo\n", `unknown field "Name"; did you mean "name"?`},
		"BothCasesTop":   {"name: demo\n", "name: demo\nName: other\n", `unknown field "Name"; did you mean "name"?`},
		"MiscasedInline": {"kind: Namespace", "Kind: Namespace", `unknown field "steps[1].expect[0].Kind"; did you mean "kind"?`},
		"BothCasesStep":  {"- converge: true\n", "- converge: true\n  Converge: false\n", `unknown field "steps[0].Converge"; did you mean "converge"?`},
		"Duplicate":      {"name: demo\n", "name: demo\nname: other\n", `key "name" already set`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(control, tc.from, tc.to, 1)
			if in == control {
				t.Fatalf("the edit %q did not apply", tc.from)
			}
			_, err := sim.ParseScenario([]byte(in))
			if !errors.Is(err, sim.ErrInvalidScenario) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseScenario(%q) = %v, want ErrInvalidScenario naming %s", in, err, tc.want)
			}
		})
	}
}

// FuzzParseScenario: any input parses or is refused with
// ErrInvalidScenario, and a refusal of several problems lists as many
// lines as its count says (the first termsafe.MaxErrors and a count of the
// rest), none with a control character.
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
				if lines := strings.Count(msg, "\n  "); lines != min(n, termsafe.MaxErrors+1) {
					t.Fatalf("%d problems announced, %d listed: %q", n, lines, msg)
				}
			}
			if strings.Count(msg, "\n") > termsafe.MaxErrors+1 || strings.ContainsFunc(msg, termsafe.IsEscaped) {
				t.Fatalf("the refusal floods or carries a control character: %q", msg)
			}
			return
		}
		if s == nil {
			t.Fatal("an accepted scenario must be returned")
		}
	})
}

// TestScenarioDocuments: a scenario is one document, so a second one is
// refused rather than dropped, and empty ones around it are passed over;
// the objects a step applies are read from every document, and a syntax
// error in any of them is refused, naming the document.
func TestScenarioDocuments(t *testing.T) {
	const control = "name: demo\nsteps:\n- converge: true\n"
	if s, err := sim.ParseScenario([]byte("---\n---\n" + control + "---\n")); err != nil || s.Name != "demo" {
		t.Errorf("one scenario among empty documents: %+v, %v", s, err)
	}
	_, err := sim.ParseScenario([]byte(control + "---\nname: second\nsteps:\n- converge: true\n"))
	if !errors.Is(err, sim.ErrInvalidScenario) || !strings.Contains(err.Error(), "holds 2 YAML documents (the second begins on line 4)") {
		t.Errorf("two scenarios in one file: %v", err)
	}
	ns := func(name string) string { return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + name + "}\n" }
	objs, err := sim.DecodeObjects([]byte("---\n" + ns("a") + "---\n---\n" + ns("b")))
	if err != nil || len(objs) != 2 || objs[1].GetName() != "b" {
		t.Errorf("two objects among empty documents: %v, %v", objs, err)
	}
	for name, in := range map[string]string{
		"AfterEnd":       ns("a") + "...\n" + ns("b"),
		"SyntaxInSecond": ns("a") + "---\n" + ns("b") + " x: [\n",
	} {
		if objs, err := sim.DecodeObjects([]byte(in)); !errors.Is(err, sim.ErrInvalidScenario) || !strings.Contains(err.Error(), "document 2: yaml: line") {
			t.Errorf("%s: DecodeObjects = %v, %v; want an error naming document 2 and its line", name, objs, err)
		}
	}
}
