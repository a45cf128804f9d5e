package tenantplan

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func TestLoadTenantsDefaults(t *testing.T) {
	spec, err := LoadTenants([]byte("tenants:\n- name: alpha\n  storage: alpha-disks\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Tenants{Platform: Platform{PVEVersion: pveacl.PVE9}, Tenants: []Tenant{{Name: "alpha", Pool: "alpha", Storage: "alpha-disks",
		User: "alpha@pve", Tokens: TenantTokens{CSI: "csi", CCM: "ccm"}}}}
	if diff := cmp.Diff(want, *spec); diff != "" {
		t.Errorf("defaults: -want +got:\n%s", diff)
	}
	if _, err := LoadTenants(mustRead(t, "testdata/tenants.yaml")); err != nil {
		t.Errorf("the example specification must load: %v", err)
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadTenantsErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		yaml   string
		want   []string // substrings, each must appear
	}{
		"UnknownField": {
			reason: "typos are errors, not silently ignored keys",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  storag: s2\n",
			want:   []string{`unknown field "tenants[0].storag"`},
		},
		"MiscasedField": {
			reason: "a key matches its field exactly, as in the Kubernetes API, not whatever its case",
			yaml:   "Tenants:\n- name: a\n  storage: s1\n",
			want:   []string{`unknown field "Tenants"`},
		},
		"DuplicateField": {
			reason: "a key given twice is refused, not decided by the later one",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  storage: s2\n",
			want:   []string{`key "storage" already set in map`},
		},
		"VMIDRangeOverlap": {
			reason: "two tenants' VM id ranges may not overlap",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  vmIDRange: {start: 1000, end: 1999}\n- name: b\n  storage: s2\n  vmIDRange: {start: 1500, end: 2999}\n",
			want:   []string{`tenants[1].vmIDRange: range 1500-2999 of tenant "b" overlaps range 1000-1999 of tenant "a" (tenants[0]): give every tenant a range of its own`},
		},
		"PinnedVMInOtherRange": {
			reason: "a tenant's listed VM may not sit inside another tenant's range, where that tenant's VMs are cloned",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  vmIDRange: {start: 1000, end: 1999}\n- name: b\n  storage: s2\n  vms: [2500, 1042]\n  vmIDRange: {start: 2000, end: 2999}\n",
			want:   []string{`tenants[1].vms[1]: VM 1042 of tenant "b" lies inside vmIDRange 1000-1999 of tenant "a" (tenants[0]), where that tenant's VMs are cloned: move the VM to an id outside it, or shrink that range`},
		},
		"VMIDRangeBackwards": {
			reason: "end not below start, within Proxmox's VM ids",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  vmIDRange: {start: 1999, end: 1000}\n- name: b\n  storage: s2\n  vmIDRange: {start: 50, end: 99}\n",
			want:   []string{"tenants[0].vmIDRange: range 1999-1000 is invalid", "tenants[1].vmIDRange: range 50-99 is invalid"},
		},
		"MissingStorage": {
			reason: "every tenant needs a dedicated storage",
			yaml:   "tenants:\n- name: a\n",
			want:   []string{"tenants[0].storage: a dedicated storage is required"},
		},
		"SharedStorage": {
			reason: "two tenants on one storage reach each other's volumes",
			yaml:   "tenants:\n- name: a\n  storage: s1\n- name: b\n  storage: s2\n  storages: [s1]\n",
			want:   []string{`tenants[1].storages[0]: storage "s1" already belongs to tenant "a"`},
		},
		"StorageIsShared": {
			reason: "a platform storage cannot be a tenant's",
			yaml:   "platform:\n  sharedStorages: [iso]\ntenants:\n- name: a\n  storage: iso\n",
			want:   []string{`tenants[0].storage: storage "iso" already belongs to the shared storages`},
		},
		"SamePool": {
			reason: "one pool per tenant",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  pool: p\n- name: b\n  storage: s2\n  pool: p\n",
			want:   []string{`tenants[1].pool: pool "p" already belongs to tenant "a"`},
		},
		"NestedPool": {
			reason: "a tenant pool inside another tenant's pool inherits its propagating entries",
			yaml:   "tenants:\n- name: a\n  storage: s1\n- name: b\n  storage: s2\n  pool: a/b\n",
			want:   []string{`tenants[1].pool: pool "a/b" is nested in pool "a" of tenant "a"`},
		},
		"BadIDs": {
			reason: "ids follow PVE's grammar",
			yaml:   "tenants:\n- name: a\n  storage: 1s\n  user: nobody\n  pool: 9p\n  tokens: {csi: x, ccm: x}\n",
			want: []string{"tenants[0].storage: storage ID '1s' is invalid", "tenants[0].user: value 'nobody' does not look like a valid user name",
				"tenants[0].pool: pool name must start with a letter", "tenants[0].tokens.csi: token name 'x' is invalid",
				"tenants[0].tokens: the CSI and CCM tokens must differ"},
		},
		"RootUser": {
			reason: "root@pam ignores ACLs entirely",
			yaml:   "platform:\n  capmox: {user: root@pam, token: capi}\ntenants: []\n",
			want:   []string{"platform.capmox.user: root@pam bypasses every ACL check"},
		},
		"SharedVMAndVLAN": {
			reason: "a VM or a VLAN belongs to one tenant",
			yaml: "platform:\n  capmox: {user: capmox@pve, token: capi}\ntenants:\n" +
				"- {name: a, storage: s1, vms: [100], networks: [{bridge: vmbr1, vlans: [10]}]}\n" +
				"- {name: b, storage: s2, vms: [100, 99], networks: [{bridge: vmbr1, vlans: [10, 5000]}]}\n",
			want: []string{`tenants[1].vms[0]: VM "100" already belongs to tenant "a"`, "tenants[1].vms[1]: VM id 99 is invalid",
				`tenants[1].networks[0].vlans[0]: VLAN "localnetwork/vmbr1/10" already belongs to tenant "a"`,
				"tenants[1].networks[0].vlans[1]: VLAN id 5000 is out of range"},
		},
		"VMIDTooLarge": {
			reason: "PVE's VM ids end at 999999999",
			yaml:   "tenants:\n- {name: a, storage: s1, vms: [999999999, 1000000000]}\n",
			want:   []string{"tenants[0].vms[1]: VM id 1000000000 is invalid: Proxmox VM ids end at 999999999"},
		},
		"NetworksNeedCapmox": {
			reason: "SDN.Use goes to the capmox token",
			yaml:   "tenants:\n- {name: a, storage: s1, networks: [{bridge: vmbr1, vlans: [10]}]}\n",
			want:   []string{"tenants[0].networks[0]: networks need platform.capmox"},
		},
		"FoldedNames": {
			reason: "a-b and a_b, Alpha and alpha would share Kubernetes names derived from them",
			yaml:   "tenants:\n- {name: a-b, storage: s1}\n- {name: a_b, storage: s2}\n- {name: Alpha, storage: s3}\n- {name: alpha, storage: s4}\n",
			want: []string{`tenants[1].name: name "a_b" of tenant "a_b" and name "a-b" of tenant "a-b" differ only in case`,
				`tenants[3].name: name "alpha" of tenant "alpha" and name "Alpha" of tenant "Alpha" differ only in case`,
				`tenants[1].user: user "a_b@pve" of tenant "a_b" and user "a-b@pve" of tenant "a-b"`},
		},
		"Empty": {
			reason: "a 0-byte file is a mistake, never no tenants",
			yaml:   "",
			want:   []string{"the tenant specification: invalid tenant specification: it is empty; write the tenants (or `tenants: []` to mean none)"},
		},
		"Blank": {
			reason: "blank lines and comments are empty too",
			yaml:   " \n  \n# tenants: none\n",
			want:   []string{"it is empty"},
		},
		"OnlyEmptyDocuments": {
			reason: "empty documents hold no tenants either",
			yaml:   "---\n---\n# none\n",
			want:   []string{"it is empty"},
		},
		"SecondDocument": {
			reason: "a tenant in a second document is refused, not dropped",
			yaml:   "tenants:\n- {name: a, storage: s1}\n---\ntenants:\n- {name: b, storage: s2}\n",
			want:   []string{"invalid tenant specification: holds 2 YAML documents (the second begins on line 3)"},
		},
		"SyntaxInSecondDocument": {
			reason: "a syntax error in any document is refused",
			yaml:   "tenants:\n- {name: a, storage: s1}\n---\ntenants: [\n",
			want:   []string{"invalid tenant specification: document 2: yaml: line 4"},
		},
		"Garbage": {
			reason: "what does not parse is an error",
			yaml:   "\x00\x01{[",
			want:   []string{"cannot read the tenant specification"},
		},
		"NotAMap": {
			reason: "a scalar is no specification",
			yaml:   "tenants",
			want:   []string{"cannot read the tenant specification"},
		},
		"TemplatesWithoutCapmox": {
			reason: "templates are cloned by the tenant's own capmox token",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  templates: [9000]\n",
			want:   []string{"tenants[0].templates: templates are cloned by the tenant's own capmox token: set tokens.capmox"},
		},
		"CapmoxWithoutTemplates": {
			reason: "a capmox token with nothing to clone",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  tokens: {capmox: capmox}\n",
			want:   []string{"tenants[0].templates: list the VM templates the tenant's capmox token may clone"},
		},
		"CapmoxIsCSI": {
			reason: "the capmox token has its own blast radius",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  tokens: {capmox: csi}\n  templates: [9000]\n",
			want:   []string{`tenants[0].tokens.capmox: the capmox token must differ from the CSI and CCM tokens ("csi")`},
		},
		"BadTemplate": {
			reason: "a template is a VM id",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  tokens: {capmox: capmox}\n  templates: [99]\n",
			want:   []string{"tenants[0].templates[0]: VM id 99 is invalid: use 100-999999999"},
		},
		"NoVLANNotUntagged": {
			reason: "a network names VLANs or says untagged",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  tokens: {capmox: capmox}\n  templates: [9000]\n  networks: [{bridge: vmbr0}]\n",
			want:   []string{"tenants[0].networks[0].vlans: list at least one VLAN id (1-4094), or set untagged: true for NICs on the bridge itself"},
		},
		"LinkedWithoutCapmox": {
			reason: "linked clones are the tenant's capmox token's",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  linkedCloneStorages: [tmpl]\n",
			want:   []string{"tenants[0].linkedCloneStorages: linked clones are made by the tenant's own capmox token: set tokens.capmox"},
		},
		"LinkedOwnStorage": {
			reason: "the tenant's own storage needs no grant",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  tokens: {capmox: capmox}\n  templates: [9000]\n  linkedCloneStorages: [s1]\n",
			want:   []string{`tenants[0].linkedCloneStorages[0]: storage "s1" is the tenant's own`},
		},
		"LinkedOtherTenant": {
			reason: "another tenant's storage is refused, whichever comes first",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  tokens: {capmox: capmox}\n  templates: [9000]\n  linkedCloneStorages: [s2]\n- name: b\n  storage: s2\n",
			want:   []string{`tenants[0].linkedCloneStorages[0]: storage "s2" is tenant "b"'s dedicated storage`},
		},
		"LinkedTwiceAndInvalid": {
			reason: "a storage listed twice and an invalid id",
			yaml:   "tenants:\n- name: a\n  storage: s1\n  tokens: {capmox: capmox}\n  templates: [9000]\n  linkedCloneStorages: [tmpl, tmpl, 'bad id']\n",
			want:   []string{`tenants[0].linkedCloneStorages[1]: storage "tmpl" is listed twice`, "tenants[0].linkedCloneStorages[2]:"},
		},
		"Version": {
			reason: "only PVE 8 and 9",
			yaml:   "platform: {pveVersion: 7}\ntenants: []\n",
			want:   []string{"platform.pveVersion: unsupported Proxmox VE version: Proxmox VE major version 7 is not supported: use 8 or 9"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadTenants([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("%s: no error", tc.reason)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("%s: error does not wrap ErrInvalidSpec: %v", tc.reason, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error\n%v\nlacks %q", tc.reason, err, w)
				}
			}
		})
	}
}

// TestTenantCapmoxAccepted is the control of the capmox refusals, and
// checks the SDN paths of an untagged bridge and its VLANs.
func TestTenantCapmoxAccepted(t *testing.T) {
	spec, err := LoadTenants([]byte("tenants:\n- name: a\n  storage: s1\n  tokens: {capmox: capmox}\n  templates: [9000]\n  networks: [{bridge: vmbr0, untagged: true, vlans: [7]}, {bridge: vmbr1, untagged: true}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tn := spec.Tenants[0]
	if tn.CapmoxTokenID() != "a@pve!capmox" {
		t.Errorf("capmox token %q", tn.CapmoxTokenID())
	}
	got := append(tn.Networks[0].SDNPaths(), tn.Networks[1].SDNPaths()...)
	want := []string{"/sdn/zones/localnetwork/vmbr0", "/sdn/zones/localnetwork/vmbr0/7", "/sdn/zones/localnetwork/vmbr1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SDN paths (-want +got):\n%s", diff)
	}
}

// TestLinkedCloneStoragesAccepted is the control of the Linked refusals:
// a storage no tenant owns (shared with other tenants' templates) is read,
// and the plan grants the capmox token and its user exactly
// Datastore.AllocateSpace there.
func TestLinkedCloneStoragesAccepted(t *testing.T) {
	spec, err := LoadTenants([]byte("tenants:\n- name: a\n  storage: s1\n  tokens: {capmox: capmox}\n  templates: [9000]\n  linkedCloneStorages: [tmpl]\n- name: b\n  storage: s2\n  tokens: {capmox: capmox}\n  templates: [9000]\n  linkedCloneStorages: [tmpl]\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := buildDesired(spec, spec.Platform.PVEVersion)
	var got []string
	for k := range d.acl {
		if k.Path == "/storage/tmpl" {
			got = append(got, string(k.Kind)+" "+k.Subject+" "+k.Role)
		}
	}
	slices.Sort(got)
	want := []string{"token a@pve!capmox CozyLinkedClone", "token b@pve!capmox CozyLinkedClone", "user a@pve CozyLinkedClone", "user b@pve CozyLinkedClone"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries on /storage/tmpl (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Datastore.AllocateSpace"}, d.roles[RoleLinkedClone]); diff != "" {
		t.Errorf("CozyLinkedClone (-want +got):\n%s", diff)
	}
}

// TestLoadTenantsExplicitlyNone is the control of the Empty refusals: a
// specification that says it has no tenants is read, with or without empty
// documents around it.
func TestLoadTenantsExplicitlyNone(t *testing.T) {
	for _, doc := range []string{"tenants: []\n", "{}", "platform: {pveVersion: 8}\n", "---\n---\ntenants: []\n---\n"} {
		spec, err := LoadTenants([]byte(doc))
		if err != nil || len(spec.Tenants) != 0 {
			t.Errorf("%q is read as no tenants: %v %v", doc, spec, err)
		}
	}
}

// TestVMIDRangesAccepted is the control of the VMIDRange refusals: ranges
// that touch without overlapping, and a tenant without one.
func TestVMIDRangesAccepted(t *testing.T) {
	spec, err := LoadTenants([]byte("tenants:\n- name: a\n  storage: s1\n  vmIDRange: {start: 1000, end: 1999}\n- name: b\n  storage: s2\n  vmIDRange: {start: 2000, end: 2999}\n- name: c\n  storage: s3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := spec.Tenants[1].VMIDRange; r == nil || !r.Contains(2000) || r.Contains(1999) {
		t.Errorf("tenant b's range: %v", r)
	}
}

// TestLongValueIsCut: a 1 MB value of the specification is named in a
// short error, cut with the count of the bytes left out, by its field.
func TestLongValueIsCut(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for name, c := range map[string]struct{ yaml, field string }{
		"Name":    {"tenants:\n- {name: " + long + ", storage: s1}\n", "tenants[0].user: user name 'xxx"},
		"Storage": {"tenants:\n- {name: a, storage: s1}\n- {name: b, storage: s1!" + long + "}\n", "tenants[1].storage: storage ID 's1!xxx"},
		"Owned":   {"tenants:\n- {name: a, storage: s1, storages: [" + long + "]}\n- {name: b, storage: " + long + "}\n", `tenants[1].storage: storage "xxx`},
	} {
		_, err := LoadTenants([]byte(c.yaml))
		if err == nil || len(err.Error()) > 2048 || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), "more bytes)") {
			t.Errorf("%s: %d bytes: %.700v", name, len(fmt.Sprint(err)), err)
		}
	}
}
