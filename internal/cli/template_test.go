package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

const chartValues = `cluster: ""
talos:
  version: "v1.13.6"
  schematicID: "` + guestAgentID + `"
  imageFactoryURL: "https://factory.talos.dev/"
  installerRepository: "factory.talos.dev/installer"
substrate: proxmox
`

func TestTemplatePrint(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"values.yaml": chartValues,
		"agent.yaml":  guestAgentSchematic,
		"zfs.yaml":    "customization: {systemExtensions: {officialExtensions: [siderolabs/zfs]}}\n",
		"empty.yaml":  "{}\n",
	})
	values, agent, zfs, empty := filepath.Join(dir, "values.yaml"), filepath.Join(dir, "agent.yaml"), filepath.Join(dir, "zfs.yaml"), filepath.Join(dir, "empty.yaml")
	spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: "9000", Storage: "local-lvm", TalosVersion: "v1.13.6", SchematicID: guestAgentID})
	if err != nil {
		t.Fatal(err)
	}
	wantProgram, err := talostemplate.Program(spec)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason   string
		args     []string
		code     int
		program  bool   // stdout is exactly the chart-default program
		contains string // stdout contains
		errOut   string // stderr contains; "" means stderr must be empty
	}{
		"Values":        {reason: "the chart's talos: block gives version, schematic and factory", args: []string{"template", "print", "9000", "local-lvm", "--values", values}, program: true},
		"Flags":         {reason: "flags alone work too", args: []string{"template", "print", "9000", "local-lvm", "--talos-version", "v1.13.6", "--schematic-id", guestAgentID}, program: true},
		"SchematicFile": {reason: "the ID is computed from the schematic file", args: []string{"template", "print", "9000", "local-lvm", "--talos-version", "v1.13.6", "--schematic", agent}, program: true},
		"FlagsOverride": {reason: "a flag beats the values file", args: []string{"template", "print", "9000", "local-lvm", "--values", values, "--talos-version", "v1.14.0"}, contains: "/v1.14.0/nocloud-amd64.raw.xz'"},
		"Tags":          {reason: "tags are normalised", args: []string{"template", "print", "9000", "local-lvm", "--values", values, "--tags", "Pool-A,talos,talos"}, contains: "TAGS='pool-a;talos'"},
		"ZFS":           {reason: "a zfs schematic is refused and the reason given", args: []string{"template", "print", "9000", "local-lvm", "--talos-version", "v1.13.6", "--schematic", zfs}, code: 1, errOut: "waits for /dev/zfs"},
		"NoAgentExt":    {reason: "a schematic without the agent warns on stderr, and the program still prints", args: []string{"template", "print", "9000", "local-lvm", "--talos-version", "v1.13.6", "--schematic", empty}, contains: "--agent enabled=1", errOut: "Warning: schematic 37656798 has no siderolabs/qemu-guest-agent"},
		"AgentDisabled": {reason: "the agent extension without the agent channel warns of the reboot loop", args: []string{"template", "print", "9000", "local-lvm", "--values", values, "--no-agent"}, contains: "--agent enabled=0", errOut: "70 minutes"},
		"UnknownID":     {reason: "an unknown schematic cannot be checked, and says so", args: []string{"template", "print", "9000", "local-lvm", "--talos-version", "v1.13.6", "--schematic-id", strings.Repeat("b", 64)}, contains: "qm create", errOut: "was not checked"},
		"IDMismatch":    {reason: "the schematic file must be the one named", args: []string{"template", "print", "9000", "local-lvm", "--values", values, "--schematic", empty}, code: 1, errOut: "has the ID 376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba, but the schematic ID to build is " + guestAgentID},
		"BadVMID":       {reason: "the reference message body", args: []string{"template", "print", "42", "local-lvm", "--values", values}, code: 1, errOut: "vmid 42 is not a Proxmox VM id (100-999999999)"},
		"Several":       {reason: "every bad input is reported", args: []string{"template", "print", "42", "9x", "--values", values, "--disk-size", "20Gi"}, code: 1, errOut: "storage 9x is not a Proxmox storage id"},
		"NoVersion":     {reason: "without a version nothing can be built", args: []string{"template", "print", "9000", "local-lvm", "--schematic-id", guestAgentID}, code: 1, errOut: "the Talos version is not set: pass --talos-version"},
		"NoSchematic":   {reason: "without a schematic nothing can be built", args: []string{"template", "print", "9000", "local-lvm", "--talos-version", "v1.13.6"}, code: 1, errOut: "the schematic is not set"},
		"ValuesNoTalos": {reason: "a values file without talos:", args: []string{"template", "print", "9000", "local-lvm", "--values", agent}, code: 1, errOut: "there is no talos: block"},
		"MissingArgs":   {reason: "VMID and STORAGE are required", args: []string{"template", "print", "9000"}, code: 2, errOut: "accepts 2 arg"},
		"CAOverHTTP":    {reason: "a factory CA needs https", args: []string{"template", "print", "9000", "local-lvm", "--values", values, "--factory-url", "http://mirror.lan", "--factory-ca", agent}, code: 1, errOut: "is not https"},
		"GPU": {reason: "--nvidia's schematic and two devices of a PCI mapping: a q35 machine, a hostpciN each, their tag",
			args:     []string{"template", "print", "9001", "local-lvm", "--talos-version", "v1.13.6", "--nvidia", "--pci-mapping", "a100", "--pci-mapping", "a100"},
			contains: "TAGS='cozystack;gpu-2x-a100;schematic-99073176;talos;talos-v1.13.6'"},
		"GPUDevices": {reason: "each device is a hostpciN of the mapping, passed through as PCI Express",
			args:     []string{"template", "print", "9001", "local-lvm", "--talos-version", "v1.13.6", "--nvidia", "--pci-mapping", "a100", "--pci-mapping", "a100"},
			contains: "  --machine q35 --hostpci0 'mapping=a100,pcie=1' --hostpci1 'mapping=a100,pcie=1'\n"},
		"NVIDIAID": {reason: "--nvidia builds the NVIDIA schematic's image", args: []string{"template", "print", "9001", "local-lvm", "--talos-version", "v1.13.6", "--nvidia"},
			contains: "/image/990731763242a6b3cf735e49d0f550ce4068b4d0e7f4dfbb49a31799b698877e/v1.13.6/nocloud-amd64.raw.xz'"},
		"BadMapping": {reason: "a mapping id is refused by the flag's name", args: []string{"template", "print", "9001", "local-lvm", "--values", values, "--pci-mapping", "1x"},
			code: 1, errOut: "--pci-mapping: PCI mapping 1x (device 1) is not a Proxmox VE mapping id"},
		"TwoMappings": {reason: "one mapping per template", args: []string{"template", "print", "9001", "local-lvm", "--values", values, "--pci-mapping", "a100", "--pci-mapping", "l40s"},
			code: 1, errOut: "--pci-mapping: the PCI devices come from two mappings, a100 and l40s"},
		"NVIDIAAndSchematic": {reason: "one schematic", args: []string{"template", "print", "9001", "local-lvm", "--talos-version", "v1.13.6", "--nvidia", "--schematic", agent},
			code: 2, errOut: "--nvidia and --schematic both give the schematic: pass one of them"},
		"NVIDIAAndValues": {reason: "the pool's schematic must be the NVIDIA one", args: []string{"template", "print", "9001", "local-lvm", "--values", values, "--nvidia"},
			code: 1, errOut: "--nvidia builds from the NVIDIA schematic 990731763242a6b3cf735e49d0f550ce4068b4d0e7f4dfbb49a31799b698877e, but the schematic ID to build is " + guestAgentID},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := talosRun(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("%s: exit %d, want %d (stderr %q)", tc.reason, code, tc.code, errOut)
			}
			if tc.program {
				if diff := cmp.Diff(wantProgram, out); diff != "" {
					t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
				}
			}
			if !strings.Contains(out, tc.contains) {
				t.Errorf("%s: stdout lacks %q:\n%s", tc.reason, tc.contains, out)
			}
			if tc.errOut == "" && errOut != "" || !strings.Contains(errOut, tc.errOut) {
				t.Errorf("%s: stderr %q, want %q", tc.reason, errOut, tc.errOut)
			}
			if code != 0 && out != "" {
				t.Errorf("%s: a refusal prints no program, got %q", tc.reason, out)
			}
		})
	}
}

func TestTemplatePrintJSON(t *testing.T) {
	dir := writeFiles(t, map[string]string{"values.yaml": chartValues})
	out, errOut, code := talosRun(t, "", "template", "print", "9000", "local-lvm", "--values", filepath.Join(dir, "values.yaml"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got templatePrintResult
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := talostemplate.Spec{VMID: 9000, Storage: "local-lvm", TalosVersion: "v1.13.6", SchematicID: guestAgentID, FactoryURL: "https://factory.talos.dev",
		DiskSize: "20G", CPU: "x86-64-v2-AES", Tags: []string{"cozystack", "schematic-ce4c9805", "talos", "talos-v1.13.6"}}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec: -want +got:\n%s", diff)
	}
	if !strings.HasPrefix(got.Program, "#!/bin/sh\n") || !strings.Contains(got.PoolSnippet, `    - "talos-v1.13.6"`) || len(got.Warnings) != 0 {
		t.Errorf("program, snippet and no warnings expected, got %+v", got)
	}
}

const clusterResources = `{"data":[
 {"id":"qemu/100","type":"qemu","vmid":100,"name":"web","node":"pve1","template":0,"tags":"cozystack;talos;talos-v1.13.6"},
 {"id":"qemu/9000","type":"qemu","vmid":9000,"name":"talos-v1.13.6-ce4c9805","node":"pve1","template":1,"tags":"capmox-template;cozystack;talos;talos-v1.13.6"},
 {"id":"qemu/9001","type":"qemu","vmid":9001,"name":"talos-commas","node":"pve2","template":1,"tags":"cozystack,talos,talos-v1.13.6"}
]}`

func TestTemplateSelect(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"cluster.json": clusterResources,
		"one.yaml":     "- {vmid: 9000, name: t, node: pve1, template: 1, tags: cozystack;talos;talos-v1.13.6}\n",
		"bad.json":     `{"result": []}`,
	})
	cluster, one, bad := filepath.Join(dir, "cluster.json"), filepath.Join(dir, "one.yaml"), filepath.Join(dir, "bad.json")
	cases := map[string]struct {
		reason string
		args   []string
		code   int
		out    []string // stdout contains each
		errOut string   // stderr is exactly this
	}{
		"Found": {reason: "the one template with exactly the tags", args: []string{"template", "select", "--tags", "cozystack,talos,talos-v1.13.6", "--resources", one},
			out: []string{"capmox v0.7 clones template 9000 (t) on node pve1"}},
		"NotFound": {reason: "capmox's exact error on stderr, the why on stdout", args: []string{"template", "select", "--tags", "Talos,cozystack,talos-v1.13.6", "--resources", cluster},
			code:   1,
			errOut: "Error: VM template not found: found 0 VM templates with tags \"Talos;cozystack;talos-v1.13.6\"\n",
			out: []string{
				`template 9000 (talos-v1.13.6-ce4c9805) on pve1 has the extra tag(s) "capmox-template"`,
				"template 9001 (talos-commas) on pve2 has its tags separated by commas",
				"VM 100 (web) on pve1 carries the selector's tags but is not a template",
				"9000  talos-v1.13.6-ce4c9805",
			}},
		"Subset": {reason: "capmox v0.8 uniqueSubset takes the superset", args: []string{"template", "select", "--tags", "cozystack,talos,talos-v1.13.6", "--resources", cluster, "--capmox", "v0.8", "--match-policy", "uniqueSubset"},
			out: []string{"capmox v0.8 clones template 9000 (talos-v1.13.6-ce4c9805) on node pve1"}},
		"V07Policy":   {reason: "v0.7 has no match policy", args: []string{"template", "select", "--tags", "a", "--resources", cluster, "--match-policy", "bestSubset"}, code: 1, errOut: "Error: cannot simulate match policy bestSubset on capmox v0.7: it has no templateSelector.matchPolicy and always compares tag sets exactly; use capmox v0.8\n"},
		"BadTag":      {reason: "a selector the CRD refuses is a usage error", args: []string{"template", "select", "--tags", "a, b", "--resources", cluster}, code: 2, errOut: "Error: --tags item 2 \" b\" is not a tag capmox's CRD accepts in matchTags (letters, digits, _ + . -, not starting with + . -)\nRun 'pxsubstrate template select --help' for usage.\n"},
		"BadFile":     {reason: "a file without data is explained", args: []string{"template", "select", "--tags", "a", "--resources", bad}, code: 1, errOut: "Error: cannot read cluster resources from " + bad + ": invalid cluster resources: the object has no data array; give the answer of pvesh get /cluster/resources --type vm --output-format json\n"},
		"NoResources": {reason: "--resources is required", args: []string{"template", "select", "--tags", "a"}, code: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := talosRun(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("%s: exit %d, want %d (stderr %q)", tc.reason, code, tc.code, errOut)
			}
			for _, want := range tc.out {
				if !strings.Contains(out, want) {
					t.Errorf("%s: stdout lacks %q:\n%s", tc.reason, want, out)
				}
			}
			if tc.errOut != "" || code == 0 {
				if diff := cmp.Diff(tc.errOut, errOut); diff != "" {
					t.Errorf("%s: stderr -want +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}

func TestTemplateSelectJSON(t *testing.T) {
	dir := writeFiles(t, map[string]string{"cluster.json": clusterResources})
	out, _, code := talosRun(t, "", "template", "select", "--tags", "cozystack,talos,talos-v1.13.6", "--resources", filepath.Join(dir, "cluster.json"), "-o", "json", "--capmox", "v0.8")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var got struct {
		Count      int    `json:"count"`
		Error      string `json:"error"`
		Candidates []struct {
			VMID    int      `json:"vmid"`
			Extra   []string `json:"extra"`
			Counted bool     `json:"counted"`
		} `json:"candidates"`
		Explanation []string `json:"explanation"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Count != 0 || got.Error != `VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"` || len(got.Candidates) != 3 ||
		!cmp.Equal(got.Candidates[1].Extra, []string{"capmox-template"}) || len(got.Explanation) < 3 {
		t.Errorf("unexpected report: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster.json")); err != nil {
		t.Fatal(err)
	}
}

// TestTemplateSelectResourcesBound: --resources is read up to
// --max-input-size like every other input: a 3 MiB answer (24,000
// guests) is refused under 1Mi, by name and with the flag to raise, and so
// is /dev/zero; the same answer is read, and the template found, once the
// flag allows it.
func TestTemplateSelectResourcesBound(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"data":[{"vmid":9000,"name":"t","node":"pve1","template":1,"tags":"cozystack;talos;talos-v1.13.6"}`)
	for i := 0; b.Len() < 3<<20; i++ {
		fmt.Fprintf(&b, `,{"vmid":%d,"name":"guest-%d","node":"pve1","template":0,"tags":"tenant-%d"}`, 10000+i, i, i)
	}
	b.WriteString("]}\n")
	dir := writeFiles(t, map[string]string{"big.json": b.String()})
	big := filepath.Join(dir, "big.json")
	args := []string{"template", "select", "--tags", "cozystack,talos,talos-v1.13.6", "--resources"}
	for _, file := range []string{big, "/dev/zero"} {
		_, errOut, code := talosRun(t, "", append(args, file, "--max-input-size", "1Mi")...)
		if code != 1 || errOut != "Error: "+file+" is larger than --max-input-size (1Mi); raise the flag if the input is meant to be this large\n" {
			t.Errorf("%s under 1Mi: exit %d, stderr %.300q", file, code, errOut)
		}
	}
	out, errOut, code := talosRun(t, "", append(args, big, "--max-input-size", "4Mi")...)
	if code != 0 || !strings.Contains(out, "clones template 9000 (t) on node pve1") {
		t.Errorf("the same file under 4Mi: exit %d, stdout %.300q, stderr %.300q", code, out, errOut)
	}
}

// TestTalosTagOneRule: a tag naming another Talos release than the one
// booted is refused alike by template print and template create (for the
// template's tags and --talos-version) and by render nodes (for a pool's
// templateTags and talos.version), through capmox.MismatchedTalosTag;
// the control, the release's own tag, is admitted by all three.
func TestTalosTagOneRule(t *testing.T) {
	pool := mustRead(t, filepath.Join(scenarios, "scenarios", "nodes-raw", "input.yaml"))
	other := strings.Replace(pool, "talos-v1.13.6]", "talos-v1.12.0]", 1)
	dir := writeFiles(t, map[string]string{"pool.yaml": pool, "other.yaml": other})
	spec := []string{"--talos-version", "v1.13.6", "--schematic-id", guestAgentID}
	printArgs := func(tags string) []string {
		return append([]string{"template", "print", "9000", "local-lvm", "--tags", tags}, spec...)
	}
	// create is refused before it connects: its URL answers nothing.
	createArgs := func(tags string) []string {
		return append([]string{"template", "create", "9000", "local-lvm", "--tags", tags, "--url", "https://127.0.0.1:1", "--token-id", "root@pam!pxs", "--token-secret", "s"}, spec...)
	}
	const wantTemplate = `Error: template tag talos-v1.12.0 names another Talos release than the template boots (v1.13.6) (a pool installing v1.13.6 whose templateTags carry talos-v1.12.0 is refused by render nodes; tag the template talos-v1.13.6, or build it of that release)` + "\n"
	for _, args := range [][]string{printArgs("cozystack,talos,talos-v1.12.0"), createArgs("cozystack,talos,talos-v1.12.0")} {
		if _, errOut, code := talosRun(t, "", args...); code != 1 || errOut != wantTemplate {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", args[1], code, errOut, wantTemplate)
		}
	}
	if _, errOut, code := talosRun(t, "", "render", "nodes", "-f", filepath.Join(dir, "other.yaml")); code != 1 || !strings.Contains(errOut, `proxmox.templateTags[3] is "talos-v1.12.0", but the workers install Talos v1.13.6`) {
		t.Errorf("render nodes: exit %d, stderr %q", code, errOut)
	}
	if out, errOut, code := talosRun(t, "", printArgs("cozystack,talos,talos-v1.13.6")...); code != 0 || !strings.Contains(out, "talos-v1.13.6") {
		t.Errorf("the control, template print: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := talosRun(t, "", createArgs("cozystack,talos,talos-v1.13.6")...); code != 1 || strings.Contains(errOut, "Talos release") || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("the control, template create, reaches the connection: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := talosRun(t, "", "render", "nodes", "-f", filepath.Join(dir, "pool.yaml")); code != 0 {
		t.Errorf("the control, render nodes: exit %d, stderr %q", code, errOut)
	}
}
