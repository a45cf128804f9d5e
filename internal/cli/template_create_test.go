package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// tplEnv is a TLS fake Proxmox VE, an Image Factory, and the files the
// flags name.
type tplEnv struct {
	srv              *pvefake.Server
	factory          string
	bare, ca, secret string
}

func newTplEnv(t *testing.T, opts ...pvefake.Option) *tplEnv {
	t.Helper()
	factory := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/nocloud-amd64.raw") && !strings.HasSuffix(r.URL.Path, "/nocloud-amd64.qcow2") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(make([]byte, 64<<10))
	}))
	t.Cleanup(factory.Close)
	srv := pvefake.NewServer(t, append([]pvefake.Option{pvefake.WithTLS()}, opts...)...)
	dir := t.TempDir()
	e := &tplEnv{srv: srv, factory: factory.URL, bare: strings.TrimSuffix(srv.URL, "/api2/json"),
		ca: filepath.Join(dir, "ca.pem"), secret: filepath.Join(dir, "token.secret")}
	for path, data := range map[string]string{e.ca: string(srv.CertificatePEM()), e.secret: srv.RootSecret + "\n"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// createArgs are `template create VMID local-lvm` with the chart-default
// spec, the root token and the CA, then extra.
func (e *tplEnv) createArgs(vmid string, extra ...string) []string {
	return append([]string{"template", "create", vmid, "local-lvm", "--talos-version", "v1.13.6", "--schematic-id", guestAgentID,
		"--factory-url", e.factory, "--url", e.bare, "--token-id", e.srv.RootTokenID, "--token-secret-file", e.secret, "--ca-file", e.ca}, extra...)
}

func TestTemplateCreateCommand(t *testing.T) {
	e := newTplEnv(t)
	out, errOut, code := run(t, e.createArgs("9000")...)
	if code != 0 {
		t.Fatalf("create: exit %d\n%s", code, errOut)
	}
	conf, _, ok := e.srv.VMConfig(9000)
	if !ok || conf["template"] != "1" || conf["tags"] != "cozystack;schematic-ce4c9805;talos;talos-v1.13.6" ||
		conf["scsi0"] != "local-lvm:base-9000-disk-1,cache=none,discard=on,size=20G,ssd=1" || conf["agent"] != "enabled=1" {
		t.Errorf("the fake holds the template: %v", conf)
	}
	snippet := "talos:\n  version: \"v1.13.6\"\n  schematicID: \"" + guestAgentID + "\"\nproxmox:\n  templateTags:\n" +
		"    - \"cozystack\"\n    - \"schematic-ce4c9805\"\n    - \"talos\"\n    - \"talos-v1.13.6\"\n  templateDiskSize: \"20Gi\"\n"
	if !strings.HasPrefix(out, "Template 9000 (talos-v1.13.6-ce4c9805) is ready on node pve, tags cozystack;schematic-ce4c9805;talos;talos-v1.13.6.\n") ||
		!strings.HasSuffix(out, "Values for the kubernetes-nodes pool:\n"+snippet) {
		t.Errorf("stdout ends with the pool snippet:\n%s", out)
	}
	wantProgress := []string{"[1/7] prepare: choose the node and storages", "[1/7] prepare: done in", "[2/7] check: check that VMID 9000 is free",
		"[3/7] download: download " + e.factory + "/image/" + guestAgentID + "/v1.13.6/nocloud-amd64.raw to local:import/", "[7/7] cleanup: done in"}
	for _, w := range wantProgress {
		if !strings.Contains(errOut, "\n"+w) && !strings.HasPrefix(errOut, w) {
			t.Errorf("stderr has the plain progress line %q:\n%s", w, errOut)
		}
	}
	if strings.Contains(out+errOut, e.srv.RootSecret) {
		t.Errorf("the token secret never reaches the output")
	}
	if strings.ContainsAny(errOut, "\r\033") {
		t.Errorf("no terminal control sequences when stderr is not a terminal: %q", errOut)
	}
	out, errOut, code = run(t, append(e.createArgs("9001"), "-o", "json")...)
	if code != 1 || out != "" || !strings.Contains(errOut, "a template already carries the tags cozystack;schematic-ce4c9805;talos;talos-v1.13.6: 9000") ||
		!strings.Contains(errOut, "nothing was changed on the hypervisor") {
		t.Errorf("same tags again: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if _, _, ok := e.srv.VMConfig(9001); ok {
		t.Errorf("the refused template was not created")
	}
}

func TestTemplateCreateJSON(t *testing.T) {
	e := newTplEnv(t)
	out, errOut, code := run(t, append(e.createArgs("9100", "--tags", "pool-a,talos", "--keep-image", "--image-format", "qcow2"), "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res templateCreateResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is JSON: %v\n%s", err, out)
	}
	want := talostemplate.PoolSnippet(res.Spec) + "  templateDiskSize: \"" + res.DiskSize + "\"\n"
	if conf := res.Config["scsi0"]; res.DiskSize == "" || !strings.Contains(conf+",", ",size="+strings.TrimSuffix(res.DiskSize, "i")+",") {
		t.Errorf("the template's disk size %q is read from its scsi0 %q", res.DiskSize, conf)
	}
	if res.Node != "pve" || res.ImageVolume != "local:import/talos-v1.13.6-ce4c9805-nocloud-amd64.qcow2" || res.ImageRemoved ||
		res.Config["tags"] != "pool-a;talos" || res.PoolSnippet != want || res.Tasks[talostemplate.StepTemplate] == "" {
		t.Errorf("the JSON report: %+v", res)
	}
}

func TestTemplateCreateFailures(t *testing.T) {
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, e *tplEnv) []string
		stderr []string
		none   bool // nothing may be left on the fake
	}{
		"VMIDTaken": {reason: "nextid refuses a VMID in use", none: true,
			setup: func(t *testing.T, e *tplEnv) []string {
				if err := e.srv.AddVM(pvefake.VMSpec{VMID: 9000}); err != nil {
					t.Fatal(err)
				}
				return e.createArgs("9000")
			},
			stderr: []string{"Error: cannot check that the template can be created: VMID 9000 cannot be used: VM 9000 already exists"}},
		"TaskFailed": {reason: "a failed resize names the VM and the image and how to remove them",
			setup: func(t *testing.T, e *tplEnv) []string {
				e.srv.FailNextTask("resize", "injected resize failure")
				return e.createArgs("9000")
			},
			stderr: []string{"Error: cannot resize the system disk: task UPID:pve:", "(resize on node pve) failed: injected resize failure",
				"\n  - VM 9000 was created but is not a template; remove it with: qm destroy 9000 (on node pve), or through the API: DELETE /api2/json/nodes/pve/qemu/9000",
				"\n  - image volume local:import/talos-v1.13.6-ce4c9805-nocloud-amd64.raw on node pve; remove it with: pvesm free local:import/talos-v1.13.6-ce4c9805-nocloud-amd64.raw"}},
		"Forbidden": {reason: "PVE's 403 with the privilege, the path and the pveum command", none: true,
			setup: func(t *testing.T, e *tplEnv) []string {
				privs := []string{"VM.Allocate", "VM.Audit", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.HWType", "VM.Config.Options",
					"VM.Config.Disk", "Datastore.AllocateSpace", "Datastore.Audit", "Sys.Audit", "Sys.Modify"}
				secret := tplToken(t, e.srv, privs)
				args := e.createArgs("9000")
				return append(args[:len(args)-6], "--token-id", "build@pve!tpl", "--token-secret", secret, "--ca-file", e.ca)
			},
			stderr: []string{"403 Permission check failed (/storage/local, Datastore.AllocateTemplate)",
				"the token lacks Datastore.AllocateTemplate on /storage/local",
				"pveum acl modify /storage/local --tokens 'build@pve!tpl' --roles PVEDatastoreAdmin",
				"pveum acl modify /storage/local --users build@pve --roles PVEDatastoreAdmin"}},
		"UnknownCA": {reason: "TLS is verified by default", none: true,
			setup:  func(t *testing.T, e *tplEnv) []string { args := e.createArgs("9000"); return args[:len(args)-2] },
			stderr: []string{"pass the cluster's CA with --ca-file"}},
		"FactoryCA": {reason: "download-url takes no CA", none: true,
			setup: func(t *testing.T, e *tplEnv) []string {
				factory := strings.Replace(e.factory, "http://", "https://", 1)
				args := e.createArgs("9000", "--factory-ca", e.ca)
				args[9] = factory
				return args
			},
			stderr: []string{"a factory CA cannot be used through the API"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTplEnv(t)
			args := tc.setup(t, e)
			secret, _ := e.srv.TokenSecret(args[argIndex(args, "--token-id")+1])
			_, errOut, code := run(t, args...)
			if code != 1 {
				t.Errorf("%s: exit %d, want 1\n%s", tc.reason, code, errOut)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("%s: stderr lacks %q:\n%s", tc.reason, s, errOut)
				}
			}
			if secret == "" || strings.Contains(errOut, secret) {
				t.Errorf("the token secret never reaches the output")
			}
			if tc.none {
				if _, _, ok := e.srv.VMConfig(9000); (ok && name != "VMIDTaken") || len(e.srv.Volumes()) != 0 {
					t.Errorf("nothing is written: %v", e.srv.Volumes())
				}
			}
		})
	}
}

// argIndex returns the index of s in args (-1 when absent).
func argIndex(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

// tplToken adds build@pve with a privilege-separated token tpl, both with a
// role of privs on / (propagated), and returns the token's secret.
func tplToken(t *testing.T, srv *pvefake.Server, privs []string) string {
	t.Helper()
	if err := srv.AddRole("TemplateBuilder", privs...); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddUser("build@pve", pvefake.UserSpec{}); err != nil {
		t.Fatal(err)
	}
	secret, err := srv.AddToken("build@pve", "tpl", pvefake.TokenSpec{Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	for kind, who := range map[pveacl.SubjectKind]string{pveacl.KindUser: "build@pve", pveacl.KindToken: "build@pve!tpl"} {
		if err := srv.SetACL("/", kind, who, true, "TemplateBuilder"); err != nil {
			t.Fatal(err)
		}
	}
	return secret
}

func TestTemplateCreateInsecureAndAPIPath(t *testing.T) {
	e := newTplEnv(t)
	args := e.createArgs("9000")
	args = append(args[:len(args)-2], "--insecure-skip-tls-verify")
	args[argIndex(args, "--url")+1] = e.srv.URL // already ends in /api2/json
	_, errOut, code := run(t, args...)
	if code != 0 || !strings.Contains(errOut, "Warning: TLS verification is off (--insecure-skip-tls-verify)") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	if conf, _, _ := e.srv.VMConfig(9000); conf["template"] != "1" {
		t.Errorf("the template is made through a URL that has /api2/json: %v", conf)
	}
}

func TestCreateProgressTerminal(t *testing.T) {
	var b bytes.Buffer
	p := newCreateProgress(&b, true)
	step := func(phase talostemplate.Phase, msg string) {
		p.report(talostemplate.Progress{Index: 3, Total: 7, Step: talostemplate.StepDownload, Phase: phase, Message: msg, Elapsed: 1500 * time.Millisecond})
	}
	step(talostemplate.PhaseStarted, "download x")
	step(talostemplate.PhaseLog, "45% \x1b[2Jdone\x07")
	step(talostemplate.PhaseDone, "download x")
	want := "\r\033[K[3/7] download: download x" + "\r\033[K[3/7] download (2s): 45% [2Jdone" + "\r\033[K[3/7] download: done in 1.5s\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("a terminal gets one rewritten line per step, task log sanitised: -want +got:\n%s", diff)
	}
	b.Reset()
	p = newCreateProgress(&b, false)
	step(talostemplate.PhaseStarted, "download x")
	step(talostemplate.PhaseLog, "45%")
	step(talostemplate.PhaseDone, "download x")
	if diff := cmp.Diff("[3/7] download: download x\n[3/7] download: done in 1.5s\n", b.String()); diff != "" {
		t.Errorf("plain lines without the task log elsewhere: -want +got:\n%s", diff)
	}
}

func TestTemplateSelectLive(t *testing.T) {
	e := newTplEnv(t)
	for _, g := range []pvefake.VMSpec{
		{VMID: 100, Name: "worker", Tags: []string{"cozystack", "talos"}},
		{VMID: 9000, Name: "a", Template: true, Tags: []string{"cozystack", "talos", "talos-v1.13.6"}},
		{VMID: 9001, Name: "b", Template: true, Tags: []string{"cozystack", "talos", "talos-v1.13.6", "pool-a"}},
	} {
		if err := e.srv.AddVM(g); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "resources.yaml")
	if err := os.WriteFile(file, []byte(`data:
  - {id: qemu/100, type: qemu, vmid: 100, name: worker, node: pve, template: 0, tags: "cozystack;talos"}
  - {id: qemu/9000, type: qemu, vmid: 9000, name: a, node: pve, template: 1, tags: "cozystack;talos;talos-v1.13.6"}
  - {id: qemu/9001, type: qemu, vmid: 9001, name: b, node: pve, template: 1, tags: "cozystack;pool-a;talos;talos-v1.13.6"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	live := []string{"--url", e.bare, "--token-id", e.srv.RootTokenID, "--token-secret-file", e.secret, "--ca-file", e.ca}
	for _, sel := range [][]string{
		{"--tags", "cozystack,talos,talos-v1.13.6"},
		{"--tags", "talos", "--capmox", "v0.8", "--match-policy", "uniqueSubset"},
		{"--tags", "cozystack,talos", "-o", "json"},
	} {
		fileOut, fileErr, fileCode := run(t, append([]string{"template", "select", "--resources", file}, sel...)...)
		liveOut, liveErr, liveCode := run(t, append(append([]string{"template", "select"}, sel...), live...)...)
		if fileCode != liveCode || fileOut != liveOut || fileErr != liveErr {
			t.Errorf("select %v: --url (exit %d) differs from --resources (exit %d):\n%s\n%s\n--- vs ---\n%s\n%s",
				sel, liveCode, fileCode, liveOut, liveErr, fileOut, fileErr)
		}
	}
	_, errOut, code := run(t, "template", "select", "--tags", "a", "--resources", file, "--url", e.bare)
	if code != 2 || !strings.Contains(errOut, "pass either --resources or --url, not both") {
		t.Errorf("both sources: exit %d %s", code, errOut)
	}
}

// TestTemplateSelectDiskSize: with --url the selected template's disk size
// is read from its configuration and named as the pool's
// proxmox.templateDiskSize; --resources cannot know it.
func TestTemplateSelectDiskSize(t *testing.T) {
	e := newTplEnv(t)
	if err := e.srv.AddVM(pvefake.VMSpec{VMID: 9000, Name: "a", Template: true, Tags: []string{"talos"},
		Disks: map[string]string{"scsi0": "local-lvm:20"}}); err != nil {
		t.Fatal(err)
	}
	live := []string{"--url", e.bare, "--token-id", e.srv.RootTokenID, "--token-secret-file", e.secret, "--ca-file", e.ca}
	out, errOut, code := run(t, append([]string{"template", "select", "--tags", "talos"}, live...)...)
	want := "Its disk scsi0 is 20Gi: a pool's diskSize may not be smaller (proxmox.templateDiskSize: 20Gi)"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want %q in\n%s%s", code, want, out, errOut)
	}
	out, _, _ = run(t, append([]string{"template", "select", "--tags", "talos", "-o", "json"}, live...)...)
	var res templateSelectResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.TemplateDiskSize != "20Gi" {
		t.Errorf("templateDiskSize in JSON: %q (%v)", res.TemplateDiskSize, err)
	}
}

// TestTemplateCreateGPU: --pci-mapping builds a template with the
// mapping's device on a q35 machine, tagged for it, and the pool snippet
// names the gpus; a mapping the cluster lacks is refused before anything
// is written.
func TestTemplateCreateGPU(t *testing.T) {
	e := newTplEnv(t)
	if err := e.srv.AddPCIMapping(pvefake.PCIMappingSpec{ID: "a100", Map: []string{"node=pve,path=0000:01:00.0,id=10de:20b5"}}); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, e.createArgs("9002", "--pci-mapping", "l40s")...)
	if code != 1 || !strings.Contains(errOut, "PCI mapping l40s does not exist: create it first") {
		t.Errorf("a mapping the cluster lacks: exit %d\n%s", code, errOut)
	}
	if _, _, ok := e.srv.VMConfig(9002); ok {
		t.Error("the refused template was created")
	}
	out, errOut, code := run(t, e.createArgs("9001", "--pci-mapping", "a100")...)
	if code != 0 {
		t.Fatalf("create: exit %d\n%s", code, errOut)
	}
	conf, _, _ := e.srv.VMConfig(9001)
	if conf["machine"] != "q35" || conf["hostpci0"] != "mapping=a100,pcie=1" || conf["tags"] != "cozystack;gpu-1x-a100;schematic-ce4c9805;talos;talos-v1.13.6" {
		t.Errorf("the fake holds the GPU template: %v", conf)
	}
	if !strings.Contains(out, "\ngpus:\n  - name: \"a100\"\nproxmox:\n  templateTags:\n    - \"cozystack\"\n    - \"gpu-1x-a100\"\n") {
		t.Errorf("the pool snippet names the gpus and the GPU tag:\n%s", out)
	}
}
