package tenantplan_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// FuzzLoadTenants: any input either loads into a specification that
// validates, whose YAML loads again into the same specification (an empty
// list and none are the same), or is
// refused with ErrInvalidSpec in at most termsafe.MaxErrors+1 lines without a
// control character; it never panics.
func FuzzLoadTenants(f *testing.F) {
	shipped, err := os.ReadFile("testdata/tenants.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(shipped),
		"tenants: []\n",
		"",
		"# only a comment\n",
		"tenants:\n- name: a\n  storage: a-disks\n",
		"tenants:\n- name: a\n  storage: a-disks\n  tokens: {capmox: capmox}\n  templates: [9000]\n  linkedCloneStorages: [tmpl]\n",
		"tenants:\n- name: a\n  storage: a-disks\n  linkedCloneStorages: [tmpl, tmpl]\n",
		"tenants:\n- name: a\n  storage: a-disks\n  unknown: 1\n",
		"tenants: {name: a}\n",
		"platform: {pveVersion: 7}\ntenants: []\n",
		"platform: {sharedStorages: [iso, iso]}\ntenants: []\n",
		"platform:\n  capmox: {user: capmox@pve, token: capi}\ntenants:\n- name: a\n  storage: a-disks\n  pciMappings: [gpu-a, GPU_b]\n",
		"platform:\n  capmox: {user: capmox@pve, token: capi}\ntenants:\n- name: a\n  storage: a-disks\n  pciMappings: [gpu-a, gpu-a, \"g\\x1b[31m\"]\n- name: b\n  storage: b-disks\n  pciMappings: [gpu-a]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := tenantplan.LoadTenants(data)
		if err != nil {
			if !errors.Is(err, tenantplan.ErrInvalidSpec) {
				t.Fatalf("refused without ErrInvalidSpec: %v", err)
			}
			if msg := err.Error(); strings.Count(msg, "\n") > termsafe.MaxErrors || strings.ContainsFunc(msg, termsafe.IsEscaped) {
				t.Fatalf("the refusal floods or carries a control character: %q", msg)
			}
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("loaded a specification that does not validate: %v", err)
		}
		out, err := yaml.Marshal(spec)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := tenantplan.LoadTenants(out)
		if err != nil {
			t.Fatalf("the loaded specification, written back, is refused: %v\n%s", err, out)
		}
		if diff := cmp.Diff(spec, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("written back and loaded again, the specification changed (-first +again):\n%s", diff)
		}
	})
}
