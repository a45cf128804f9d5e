package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// renderCLI runs the CLI in-process with stdin and returns stdout, stderr and the exit code.
func renderCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runIn(t, stdin, args...)
}

const scenarios = "../../capmoxrender/testdata"

func TestRenderCommands(t *testing.T) {
	golden := func(name string) string {
		b, err := os.ReadFile(filepath.Join(scenarios, "golden", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	scen := func(name, file string) string { return filepath.Join(scenarios, "scenarios", name, file) }
	cases := map[string]struct {
		reason  string
		args    []string
		stdin   string
		code    int
		stdout  string
		stderrs string
	}{
		"NodesV07": {reason: "the default stream equals the golden render", args: []string{"render", "nodes", "-f", scen("nodes-raw", "input.yaml")}, stdout: golden("nodes-raw.v0.7.yaml")},
		"NodesV09": {reason: "v0.9.0 selects the v1alpha2 generation", args: []string{"render", "nodes", "-f", scen("nodes-full-storage", "input.yaml"), "--capmox", "v0.9.0"}, stdout: golden("nodes-full-storage.v0.8.yaml")},
		"ClusterLookup": {reason: "--lookup resolves the VPC subnet", args: []string{"render", "cluster", "-f", scen("cluster-vpc", "input.yaml"), "--lookup", scen("cluster-vpc", "lookup.yaml"), "--capmox", "v0.8"},
			stdout: golden("cluster-vpc.v0.8.yaml")},
		"Stdin": {reason: "- reads standard input", args: []string{"render", "cluster", "-f", "-"}, stdin: mustRead(t, scen("cluster-ipv4", "input.yaml")), stdout: golden("cluster-ipv4.v0.7.yaml")},
		"Refusal": {reason: "a refusal exits 1 with the exact message on stderr only", args: []string{"render", "nodes", "-f", "-"}, code: 1,
			stdin:   strings.Replace(mustRead(t, scen("nodes-raw", "input.yaml")), "full: false", "full: false\n    storage: main-pool", 1),
			stderrs: "Error: proxmox.storage needs full: true: a target storage is a full-clone parameter, and a linked clone always lives on the template's storage\n"},
		"NoLookupVPC": {reason: "VPC mode without a lookup says how to give one", args: []string{"render", "cluster", "-f", scen("cluster-vpc", "input.yaml")}, code: 1,
			stderrs: `Error: proxmox.network: cannot resolve VPC "net" subnet "private" without a live lookup: pass the live ProxmoxNetwork tenant-test/subnet-b10ab7f7 (--lookup) or render against the management cluster` + "\n"},
		"BadCapmox":      {reason: "an unknown capmox release is a usage error", args: []string{"render", "nodes", "-f", scen("nodes-raw", "input.yaml"), "--capmox", "v0.6"}, code: 2},
		"BadVersionFlag": {reason: "--kubernetes-version wants MINOR=PATCH", args: []string{"render", "nodes", "-f", scen("nodes-raw", "input.yaml"), "--kubernetes-version", "v1.35"}, code: 2},
		"WrongKind": {reason: "a Kubernetes object is not a pool", args: []string{"render", "nodes", "-f", scen("cluster-ipv4", "input.yaml")}, code: 1,
			stderrs: "Error: cannot read KubernetesNodes: invalid input: the document is kind \"Kubernetes\"; give a KubernetesNodes object (apps.cozystack.io/v1alpha1)\n"},
		"MinorVersion": {reason: "a minor-only version maps through --kubernetes-version", args: []string{"render", "nodes", "-f", "-", "--kubernetes-version", "v1.35=v1.35.2"},
			stdin: strings.Replace(mustRead(t, scen("nodes-raw", "input.yaml")), "version: v1.35.2", "version: v1.35", 1), stdout: golden("nodes-raw.v0.7.yaml")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := renderCLI(t, tc.stdin, tc.args...)
			if code != tc.code {
				t.Fatalf("%s: exit %d, want %d (stderr %q)", tc.reason, code, tc.code, errOut)
			}
			if tc.code == 0 {
				if diff := cmp.Diff(tc.stdout, out); diff != "" {
					t.Errorf("%s: stdout (-want +got):\n%s", tc.reason, diff)
				}
			} else if out != "" {
				t.Errorf("%s: stdout must stay empty on failure, got %q", tc.reason, out)
			}
			if tc.stderrs != "" {
				if diff := cmp.Diff(tc.stderrs, errOut); diff != "" {
					t.Errorf("%s: stderr (-want +got):\n%s", tc.reason, diff)
				}
			}
		})
	}
}

func TestRenderJSONList(t *testing.T) {
	out, errOut, code := renderCLI(t, "", "render", "nodes", "-o", "json", "-f", filepath.Join(scenarios, "scenarios", "nodes-raw", "input.yaml"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var l struct {
		Kind  string
		Items []struct{ Kind string }
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, i := range l.Items {
		kinds = append(kinds, i.Kind)
	}
	want := []string{"ProxmoxMachineTemplate", "TalosConfigTemplate", "MachineDeployment", "MachineHealthCheck", "ServiceAccount", "Role", "RoleBinding", "Job"}
	if diff := cmp.Diff(want, kinds); diff != "" || l.Kind != "List" {
		t.Errorf("-o json must be a List of the pool's objects (-want +got):\n%s", diff)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRenderLongValueIsCut: a pool whose instanceType is 1 MB is refused
// (exit 1) in a short message on stderr that names instanceType and how
// many bytes of the value were left out.
func TestRenderLongValueIsCut(t *testing.T) {
	pool := mustRead(t, filepath.Join(scenarios, "scenarios", "nodes-raw", "input.yaml"))
	long := strings.Replace(pool, `instanceType: ""`, "instanceType: u1."+strings.Repeat("x", 1<<20), 1)
	if long == pool {
		t.Fatal("the fixture has no instanceType")
	}
	out, errOut, code := renderCLI(t, long, "render", "nodes", "-f", "-")
	if code != 1 || out != "" || len(errOut) > 1024 || !strings.HasPrefix(errOut, `Error: instanceType "u1.xxx`) || !strings.Contains(errOut, `"... (1048323 more bytes) is not a size`) {
		t.Errorf("exit %d, %d bytes of stdout, %d of stderr: %.600s", code, len(out), len(errOut), errOut)
	}
}

// TestRenderLookupDuplicate: a --lookup file that holds the same
// ProxmoxNetwork twice (a stale copy after the live one, say) is refused
// naming the file and both documents, rather than rendering from
// whichever came last; the control, the file as it is, renders.
func TestRenderLookupDuplicate(t *testing.T) {
	scen := func(file string) string { return filepath.Join(scenarios, "scenarios", "nodes-vpc", file) }
	lookup := mustRead(t, scen("lookup.yaml"))
	if _, errOut, code := renderCLI(t, "", "render", "nodes", "-f", scen("input.yaml"), "--lookup", scen("lookup.yaml")); code != 0 {
		t.Fatalf("the control: exit %d, %s", code, errOut)
	}
	first, _, _ := strings.Cut(lookup, "---\n")
	stale := strings.Replace(first, "vlan: 3901", "vlan: 3999", 1)
	dir := writeFiles(t, map[string]string{"lookup.yaml": lookup + "---\n" + stale})
	file := filepath.Join(dir, "lookup.yaml")
	_, errOut, code := renderCLI(t, "", "render", "nodes", "-f", scen("input.yaml"), "--lookup", file)
	want := "Error: cannot read " + file + `: cannot read the lookup objects: invalid input: ProxmoxNetwork "tenant-test/subnet-b10ab7f7" is in document 1 (line 1) and again in document 3 (line 38): an object may be given once; remove one of the two` + "\n"
	if code != 1 || errOut != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
}

// TestRenderLookupVLANString: a --lookup ProxmoxNetwork whose status.vlan
// is the string "3901" is refused saying so, not as a network with no
// VLAN yet; the control, the lookup as it is (vlan: 3901), renders.
func TestRenderLookupVLANString(t *testing.T) {
	scen := func(file string) string { return filepath.Join(scenarios, "scenarios", "nodes-vpc", file) }
	lookup := mustRead(t, scen("lookup.yaml"))
	quoted := strings.Replace(lookup, "vlan: 3901", `vlan: "3901"`, 1)
	if quoted == lookup {
		t.Fatal("the fixture has no vlan: 3901")
	}
	file := filepath.Join(writeFiles(t, map[string]string{"lookup.yaml": quoted}), "lookup.yaml")
	_, errOut, code := renderCLI(t, "", "render", "nodes", "-f", scen("input.yaml"), "--lookup", file)
	want := `Error: ProxmoxNetwork tenant-test/subnet-b10ab7f7: status.vlan is the string "3901": it must be an integer, written without quotes (vlan: 3901, not vlan: "3901")` + "\n"
	if code != 1 || errOut != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
	if _, errOut, code := renderCLI(t, "", "render", "nodes", "-f", scen("input.yaml"), "--lookup", scen("lookup.yaml")); code != 0 {
		t.Errorf("the control: exit %d, %s", code, errOut)
	}
}

// gpuTenants is a tenant specification whose tenant owns the nodes-gpu
// scenario's pool, with the VM id range of its options and the PCI
// mappings given.
func gpuTenants(mappings string) string {
	return `platform: {capmox: {user: capmox@pve, token: capi}}
tenants:
  - name: e2eproxmox
    pool: tenant-e2eproxmox
    storage: e2e-disks
    vmIDRange: {start: 5000, end: 5999}
    pciMappings: [` + mappings + `]
`
}

// TestRenderNodesGPU: --pci-mappings and --tenants place a pool's gpus
// as the golden render does; without the mappings, with a mappings file
// that is not PVE's answer, and with a tenant that does not list the
// mapping, the command refuses and says what to pass.
func TestRenderNodesGPU(t *testing.T) {
	scen := func(file string) string { return filepath.Join(scenarios, "scenarios", "nodes-gpu", file) }
	dir := writeFiles(t, map[string]string{
		"tenants.yaml": gpuTenants("a100"), "other.yaml": gpuTenants("l40s"),
		"bad.json": `[{"id":"a100","map":["node=pve1,path=0000:01:00.0,id=10de:20b5"],"foo":1}]`,
	})
	base := []string{"render", "nodes", "-f", scen("input.yaml"), "--lookup", scen("lookup.yaml"), "--capmox", "v0.8"}
	cases := map[string]struct {
		reason string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		"Golden": {reason: "the mappings and the tenants place the pool as the golden render",
			args: []string{"--pci-mappings", scen("pci-mappings.json"), "--tenants", filepath.Join(dir, "tenants.yaml")}, stdout: mustRead(t, filepath.Join(scenarios, "golden", "nodes-gpu.v0.8.yaml"))},
		"NoMappings": {reason: "gpus need the mappings", code: 1,
			stderr: "Error: gpus needs the Proxmox VE cluster's PCI mappings to place the workers on their devices: pass --pci-mappings FILE (Options.PCIMappings) with the answer of pvesh get /cluster/mapping/pci --output-format json\n"},
		"BadFile": {reason: "the mappings file is read strictly and named", args: []string{"--pci-mappings", filepath.Join(dir, "bad.json")}, code: 1,
			stderr: "Error: --pci-mappings " + filepath.Join(dir, "bad.json") + ": invalid PCI mappings: unknown field [0].foo: a PCI mapping has id, type, map, description, digest, mdev and live-migration-capable\n"},
		"TenantLacks": {reason: "the tenant's capmox token may use only its own mappings", code: 1,
			args:   []string{"--pci-mappings", scen("pci-mappings.json"), "--tenants", filepath.Join(dir, "other.yaml")},
			stderr: `Error: gpus[0].name is "a100", which tenant "e2eproxmox" (proxmox.pool "tenant-e2eproxmox") does not list in its pciMappings (l40s): its capmox token holds no Mapping.Use on /mapping/pci/a100, so Proxmox VE refuses the clone; add a100 to the tenant's pciMappings and apply the plan, or name one of its mappings` + "\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := renderCLI(t, "", append(slices.Clone(base), tc.args...)...)
			if code != tc.code || out != tc.stdout {
				t.Fatalf("%s: exit %d, want %d (stderr %q)\n%s", tc.reason, code, tc.code, errOut, cmp.Diff(tc.stdout, out))
			}
			if tc.stderr != "" && errOut != tc.stderr {
				t.Errorf("%s: stderr (-want +got):\n%s", tc.reason, cmp.Diff(tc.stderr, errOut))
			}
		})
	}
}
