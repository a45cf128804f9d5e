package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestPlainError(t *testing.T) {
	cases := map[string]string{
		"t.yaml: invalid tenant specification: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go struct field Tenant.tenants.storage of type string": "t.yaml: invalid tenant specification: field tenants.storage: a list where a string belongs",
		"spec: json: cannot unmarshal string into Go struct field NodesSpec.minReplicas of type int32":                                                                                "spec: field minReplicas: a string where a whole number belongs",
		"invalid: json: cannot unmarshal number into Go struct field rawConfig.zones of type []admission.rawZone":                                                                     "invalid: field zones: a number where a list belongs",
		"x: json: cannot unmarshal number into Go value of type sim.Scenario":                                                                                                         "x: a number where a mapping belongs",
		"not a VPC spec: error unmarshaling JSON: while decoding JSON: json: unknown field \"vpc\"":                                                                                   "not a VPC spec: unknown field \"vpc\"",
		"nothing to do with JSON": "nothing to do with JSON",
	}
	for in, want := range cases {
		if got := plainError(in); got != want {
			t.Errorf("plainError(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// FuzzPlainError: the rewrite never panics and never adds a Go type.
func FuzzPlainError(f *testing.F) {
	f.Add("json: cannot unmarshal array into Go struct field Tenant.tenants.storage of type string")
	f.Add("json: cannot unmarshal number into Go value of type sim.Scenario")
	f.Fuzz(func(t *testing.T, s string) {
		out := plainError(s)
		if !strings.Contains(s, "Go ") && strings.Contains(out, "Go ") {
			t.Errorf("%q became %q", s, out)
		}
	})
}

// TestErrorsNameNoGoTypes runs the commands that read YAML with a value of
// the wrong kind: each error names the field and the kinds, never a Go
// struct or type.
func TestErrorsNameNoGoTypes(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"tenants.yaml":  "tenants:\n- name: a\n  storage: [x]\n",
		"nodes.yaml":    "apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\nmetadata: {name: a-b, namespace: t}\nspec:\n  cluster: a\n  minReplicas: \"x\"\n",
		"values.yaml":   "zones: 5\n",
		"scenario.yaml": "zones: {}\nsteps: 5\n",
	})
	goType := regexp.MustCompile(`Go (struct|value)|of type|\b[a-z]+\.[A-Z]\w+\b`)
	for _, args := range [][]string{
		{"acl", "plan", "--tenants", filepath.Join(dir, "tenants.yaml")},
		{"render", "nodes", "-f", filepath.Join(dir, "nodes.yaml")},
		{"admission", "policies", "--config", filepath.Join(dir, "values.yaml")},
		{"sim", "-f", filepath.Join(dir, "scenario.yaml")},
	} {
		_, errOut, code := run(t, args...)
		if code != 1 || goType.MatchString(errOut) || !strings.Contains(errOut, "field ") {
			t.Errorf("%q: exit %d, stderr %q; want 1 naming the field, without Go types", args, code, errOut)
		}
	}
}
