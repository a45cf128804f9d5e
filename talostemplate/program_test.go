package talostemplate

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func programSpec(t *testing.T, edit func(*Inputs)) Spec {
	t.Helper()
	in := goodInputs()
	if edit != nil {
		edit(&in)
	}
	s, err := NewSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func withCA(t *testing.T) func(*Inputs) {
	ca, err := os.ReadFile("testdata/factory-ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	return func(in *Inputs) { in.FactoryCA = ca }
}

func TestProgramGolden(t *testing.T) {
	cases := map[string]struct {
		reason string
		edit   func(*Inputs)
	}{
		"program":          {reason: "the reference builder's program for the chart defaults"},
		"program-ca":       {reason: "a self-hosted factory behind an internal CA", edit: withCA(t)},
		"program-no-agent": {reason: "the agent can be left off explicitly", edit: func(in *Inputs) { in.DisableAgent = true; in.SchematicID = idEmpty }},
		"program-gpu":      {reason: "two devices of a PCI mapping, on a q35 machine", edit: withGPUs},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Program(programSpec(t, tc.edit))
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestProgramGolden -update once)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s: -golden +got:\n%s", tc.reason, diff)
			}
			for _, sh := range []string{"dash", "bash"} {
				if out, err := exec.Command(sh, "-n", "-c", got).CombinedOutput(); err != nil {
					t.Errorf("%s -n: %v\n%s", sh, err, out)
				}
			}
		})
	}
}

func TestProgramHasTheTemplatePieces(t *testing.T) {
	got, err := Program(programSpec(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	for piece, why := range map[string]string{
		"--bios ovmf --efidisk0 \"$STORAGE:1,efitype=4m,pre-enrolled-keys=0\"": "OVMF with an EFI disk without pre-enrolled keys",
		"--scsihw virtio-scsi-pci":       "virtio-scsi, not virtio-scsi-single",
		"import-from=$work/disk.raw":     "the disk is imported from the nocloud image",
		"--serial0 socket":               "serial console",
		"--agent enabled=1":              "the guest agent channel",
		"qm disk resize \"$VMID\" scsi0": "the disk is grown",
		"qm template \"$VMID\"":          "the VM becomes a template",
		"/nocloud-amd64.raw.xz'":         "the nocloud image",
	} {
		if !strings.Contains(got, piece) {
			t.Errorf("program lacks %s: %q", why, piece)
		}
	}
	if strings.Contains(got, "--net0") {
		t.Error("the template must have no NIC: capmox writes net0 on every clone")
	}
}

func TestProgramRefusesInvalidSpec(t *testing.T) {
	s := programSpec(t, nil)
	s.Storage = "x'; reboot; '"
	if _, err := Program(s); err == nil || !strings.Contains(err.Error(), "cannot render the template program") {
		t.Errorf("an invalid Spec must never be rendered into a root program, got %v", err)
	}
}

func TestPoolSnippet(t *testing.T) {
	want := "talos:\n  version: \"v1.13.6\"\n  schematicID: \"" + idGuestAgent + "\"\nproxmox:\n  templateTags:\n" +
		"    - \"cozystack\"\n    - \"schematic-ce4c9805\"\n    - \"talos\"\n    - \"talos-v1.13.6\"\n"
	if diff := cmp.Diff(want, PoolSnippet(programSpec(t, nil))); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}

// The stubs below stand in for a Proxmox VE node: qm keeps each VM's
// configuration in a file, pvesh answers from those files and a resource
// list, curl copies a fixture image. The program runs under dash, the /bin/sh
// of Proxmox VE, with the real perl, xz and mktemp.
const stubQM = `#!/bin/sh
set -eu
cmd=$1; shift
case $cmd in
create)
  id=$1; shift
  [ ! -e "$STATE/$id.conf" ] || { echo "VM $id already exists" >&2; exit 1; }
  : > "$STATE/$id.conf"
  while [ $# -gt 0 ]; do
    key=${1#--}; val=$2; shift 2
    if [ "$key" = scsi0 ]; then
      src=$(printf '%s' "$val" | sed -n 's/.*import-from=\([^,]*\).*/\1/p')
      printf 'imported: %s\n' "$(cat "$src")" >> "$STATE/$id.conf"
    fi
    printf '%s: %s\n' "$key" "$val" >> "$STATE/$id.conf"
  done ;;
disk) [ "$1" = resize ] && printf 'size %s: %s\n' "$3" "$4" >> "$STATE/$2.conf" ;;
template) printf 'template: 1\n' >> "$STATE/$1.conf" ;;
config) cat "$STATE/$1.conf" ;;
*) echo "qm: unknown command $cmd" >&2; exit 2 ;;
esac
`

const stubPvesh = `#!/bin/sh
set -eu
case "$*" in
"get /cluster/nextid --vmid "*)
  if [ -e "$STATE/$4.conf" ]; then echo "400 Parameter verification failed. vmid: VM $4 already exists" >&2; exit 2; fi
  echo "$4" ;;
"get /cluster/resources --type vm --output-format json") cat "$STATE/resources.json" ;;
"get /cluster/mapping/pci/"*)
  id=${2#/cluster/mapping/pci/}
  if [ ! -e "$STATE/mapping-$id" ]; then echo "mapping '$id' not found" >&2; exit 2; fi
  cat "$STATE/mapping-$id" ;;
*) echo "pvesh: unexpected $*" >&2; exit 3 ;;
esac
`

const stubCurl = `#!/bin/sh
set -eu
out=
while [ $# -gt 0 ]; do
  case $1 in
  -o) out=$2; shift 2 ;;
  --cacert) cp "$2" "$STATE/cacert.pem"; shift 2 ;;
  *) last=$1; shift ;;
  esac
done
printf '%s\n' "$last" > "$STATE/fetched"
cp "$STATE/image.raw.xz" "$out"
`

type node struct {
	dir, state, tmp string
	env             []string
}

func newNode(t *testing.T, resources string, withPVE bool) *node {
	t.Helper()
	n := &node{dir: t.TempDir()}
	n.state, n.tmp = filepath.Join(n.dir, "state"), filepath.Join(n.dir, "tmp")
	bin := filepath.Join(n.dir, "bin")
	for _, d := range []string{n.state, n.tmp, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stubs := map[string]string{"curl": stubCurl}
	if withPVE {
		stubs["qm"], stubs["pvesh"] = stubQM, stubPvesh
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	xz := exec.Command("xz", "-c")
	xz.Stdin = strings.NewReader("TALOS-NOCLOUD-RAW")
	img, err := xz.Output()
	if err != nil {
		t.Fatalf("xz: %v", err)
	}
	if err := os.WriteFile(filepath.Join(n.state, "image.raw.xz"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.state, "resources.json"), []byte(resources), 0o644); err != nil {
		t.Fatal(err)
	}
	n.env = []string{"PATH=" + bin + ":/usr/bin:/bin", "STATE=" + n.state, "TMPDIR=" + n.tmp}
	return n
}

func (n *node) run(t *testing.T, program string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("dash", "-s")
	cmd.Stdin = strings.NewReader(program)
	cmd.Env = n.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func (n *node) file(name string) string {
	b, _ := os.ReadFile(filepath.Join(n.state, name))
	return string(b)
}

var workDir = regexp.MustCompile(`/talos-template\.[A-Za-z0-9]{6}/`)

// clusterGuests is what pvesh lists on the stub node: a VM and two templates,
// none of which carries the default tag set.
const clusterGuests = `[{"vmid":100,"name":"web","node":"pve1","template":0,"tags":"cozystack;schematic-ce4c9805;talos;talos-v1.13.6"},
	{"vmid":9001,"name":"old","node":"pve2","template":1,"tags":"cozystack;talos;talos-v1.13.5"},
	{"vmid":9002,"node":"pve2","template":1}]`

func defaultProgram(t *testing.T) (Spec, string) {
	t.Helper()
	s := programSpec(t, nil)
	program, err := Program(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, program
}

func TestProgramCreatesTheTemplate(t *testing.T) {
	s, program := defaultProgram(t)
	n := newNode(t, clusterGuests, true)
	stdout, stderr, code := n.run(t, program)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	conf := workDir.ReplaceAllString(strings.ReplaceAll(n.file("9000.conf"), n.tmp, "$TMPDIR"), "/talos-template.XXXXXX/")
	want := `name: talos-v1.13.6-ce4c9805
tags: cozystack;schematic-ce4c9805;talos;talos-v1.13.6
ostype: l26
cpu: x86-64-v2-AES
sockets: 1
cores: 2
memory: 4096
bios: ovmf
efidisk0: local-lvm:1,efitype=4m,pre-enrolled-keys=0
scsihw: virtio-scsi-pci
imported: TALOS-NOCLOUD-RAW
scsi0: local-lvm:0,import-from=$TMPDIR/talos-template.XXXXXX/disk.raw,cache=none,discard=on,ssd=1
boot: order=scsi0
serial0: socket
vga: std
agent: enabled=1
size scsi0: 20G
template: 1
`
	if diff := cmp.Diff(want, conf); diff != "" {
		t.Errorf("VM 9000 on the node: -want +got:\n%s", diff)
	}
	if stdout != n.file("9000.conf") {
		t.Errorf("the program ends with qm config; stdout %q", stdout)
	}
	if got := strings.TrimSpace(n.file("fetched")); got != s.ImageURL() {
		t.Errorf("fetched %q, want %q", got, s.ImageURL())
	}
	if left, _ := os.ReadDir(n.tmp); len(left) != 0 {
		t.Errorf("the work directory must be removed, found %v", left)
	}
}

func TestProgramRefusesATakenTagSet(t *testing.T) {
	s, program := defaultProgram(t)
	const taken = `[{"vmid":9005,"name":"same","node":"pve3","template":1,"tags":"Talos; cozystack;;schematic-ce4c9805;talos-v1.13.6;talos"}]`
	n := newNode(t, taken, true)
	_, stderr, code := n.run(t, program)
	want := "a template already carries the tags cozystack;schematic-ce4c9805;talos;talos-v1.13.6: 9005 (same) on pve3\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d stderr %q, want 1 and %q", code, stderr, want)
	}
	if n.file("9000.conf") != "" || n.file("fetched") != "" {
		t.Error("nothing may be downloaded or created when the tag set is taken")
	}
	rs, err := ParseResources([]byte(taken))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckTagSetFree(rs, s.Tags); err == nil || err.Error()+"\n" != want {
		t.Errorf("the Go check must agree with the program's: CheckTagSetFree = %v, want %q", err, want)
	}
}

func TestProgramRefusesATakenVMID(t *testing.T) {
	_, program := defaultProgram(t)
	n := newNode(t, clusterGuests, true)
	if err := os.WriteFile(filepath.Join(n.state, "9000.conf"), []byte("name: other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := n.run(t, program)
	if code == 0 || !strings.Contains(stderr, "VM 9000 already exists") || n.file("fetched") != "" {
		t.Errorf("a taken VMID must stop the program before the download: exit %d stderr %q", code, stderr)
	}
	if n.file("9000.conf") != "name: other\n" {
		t.Error("the existing VM must be left alone")
	}
}

func TestProgramNeedsAProxmoxNode(t *testing.T) {
	_, program := defaultProgram(t)
	n := newNode(t, clusterGuests, false)
	_, stderr, code := n.run(t, program)
	if code != 1 || stderr != "this is not a Proxmox VE node: qm and pvesh are missing\n" {
		t.Errorf("exit %d stderr %q", code, stderr)
	}
}

func TestProgramTrustsTheFactoryCA(t *testing.T) {
	program, err := Program(programSpec(t, withCA(t)))
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, clusterGuests, true)
	if _, stderr, code := n.run(t, program); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want, err := os.ReadFile("testdata/factory-ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	if got := n.file("cacert.pem"); !strings.HasSuffix(got, string(want)) {
		t.Errorf("curl must trust the factory CA; its --cacert file ends %q", got[max(0, len(got)-80):])
	}
}

// withGPUs gives the template two devices of the PCI mapping a100.
func withGPUs(in *Inputs) { in.PCIMappings = []string{"a100", "a100"} }

// TestProgramCreatesAGPUTemplate: with PCI mappings the program checks
// that the mapping exists, then creates the VM on a q35 machine with a
// hostpciN per device, tagged for them; without the mapping nothing is
// downloaded or created.
func TestProgramCreatesAGPUTemplate(t *testing.T) {
	program, err := Program(programSpec(t, withGPUs))
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, clusterGuests, true)
	_, stderr, code := n.run(t, program)
	if code != 1 || stderr != "mapping 'a100' not found\nPCI mapping a100 does not exist: create it first (Datacenter, Resource Mappings)\n" ||
		n.file("fetched") != "" || n.file("9000.conf") != "" {
		t.Fatalf("without the mapping: exit %d stderr %q; nothing may be downloaded or created", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(n.state, "mapping-a100"), []byte(`{"map":["node=pve1,path=0000:01:00.0,id=10de:20b5"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := n.run(t, program); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	conf := n.file("9000.conf")
	for _, line := range []string{"tags: cozystack;gpu-2x-a100;schematic-ce4c9805;talos;talos-v1.13.6\n", "agent: enabled=1\nmachine: q35\n",
		"hostpci0: mapping=a100,pcie=1\nhostpci1: mapping=a100,pcie=1\n"} {
		if !strings.Contains(conf, line) {
			t.Errorf("VM 9000 lacks %q:\n%s", line, conf)
		}
	}
}
