package talostemplate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

const (
	defaultTags = "cozystack;schematic-ce4c9805;talos;talos-v1.13.6"
	imageVolume = "local:import/talos-v1.13.6-ce4c9805-nocloud-amd64.raw"
)

// wantTemplate is the configuration of the chart-default template 9000 on
// the fake: the print program's qm create flags, the disks as base volumes,
// scsi0 grown to 20G.
func wantTemplate(tags string) map[string]string {
	return map[string]string{
		"name": "talos-v1.13.6-ce4c9805", "tags": tags, "ostype": "l26", "cpu": "x86-64-v2-AES",
		"sockets": "1", "cores": "2", "memory": "4096", "bios": "ovmf",
		"efidisk0": "local-lvm:base-9000-disk-0,efitype=4m,pre-enrolled-keys=0,size=4M",
		"scsihw":   "virtio-scsi-pci",
		"scsi0":    "local-lvm:base-9000-disk-1,cache=none,discard=on,size=20G,ssd=1",
		"boot":     "order=scsi0", "serial0": "socket", "vga": "std", "agent": "enabled=1", "template": "1",
	}
}

func TestCreate(t *testing.T) {
	factory := newFactory(t)
	srv := pvefake.NewServer(t)
	spec := testSpec(t, factory.URL, 9000, "")
	var steps []string
	opts := fastOpts()
	opts.Progress = func(p talostemplate.Progress) {
		if p.Phase != talostemplate.PhaseLog {
			steps = append(steps, string(p.Step)+" "+string(p.Phase))
		}
	}
	res, err := talostemplate.Create(context.Background(), srv.Client(), spec, opts)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	got := snapshot(srv, 9000)
	if diff := cmp.Diff(wantTemplate(defaultTags), got.VMs[9000]); diff != "" {
		t.Errorf("template 9000 on the fake: -want +got:\n%s", diff)
	}
	wantVolumes := []pvefake.VolumeInfo{
		{Node: "pve", VolID: "local-lvm:base-9000-disk-0", Content: "images", Format: "raw", Owner: 9000, Size: 4 << 20}, // the OVMF vars, in LVM extents
		{Node: "pve", VolID: "local-lvm:base-9000-disk-1", Content: "images", Format: "raw", Owner: 9000, Size: 20 << 30},
	}
	if diff := cmp.Diff(wantVolumes, got.Volumes); diff != "" {
		t.Errorf("volumes: the disks, grown, and no image left: -want +got:\n%s", diff)
	}
	wantConf := wantTemplate(defaultTags)
	for k, v := range res.Config {
		if !strings.HasPrefix(k, "smbios1") && k != "vmgenid" && k != "meta" && wantConf[k] != v {
			t.Errorf("result config %s = %q, want %q", k, v, wantConf[k])
		}
	}
	if res.Node != "pve" || res.ImportStorage != "local" || res.ImageVolume != imageVolume || !res.ImageRemoved ||
		res.ImageURL != factory.URL+"/image/"+agentSchematic+"/v1.13.6/nocloud-amd64.raw" {
		t.Errorf("result: %+v", res)
	}
	var types []string
	for _, task := range srv.Tasks() {
		types = append(types, task.Type+" "+task.ExitStatus)
		if task.Type == "download" && !strings.Contains(strings.Join(task.Log, "\n"), "downloading "+res.ImageURL+" to "+imageVolume) {
			t.Errorf("the download fetched the uncompressed image into the import storage: %q", task.Log)
		}
	}
	if diff := cmp.Diff([]string{"download OK", "qmcreate OK", "resize OK", "qmtemplate OK", "imgdel OK"}, types); diff != "" {
		t.Errorf("tasks: -want +got:\n%s", diff)
	}
	wantSteps := []string{"prepare started", "prepare done", "check started", "check done", "download started", "download done",
		"create started", "create done", "resize started", "resize done", "template started", "template done", "cleanup started", "cleanup done"}
	if diff := cmp.Diff(wantSteps, steps); diff != "" {
		t.Errorf("progress: -want +got:\n%s", diff)
	}
}

func TestCreateOptions(t *testing.T) {
	factory := newFactory(t)
	srv := pvefake.NewServer(t, pvefake.WithNodes("pve1", "pve2"))
	if err := srv.AddStorage(pvefake.StorageSpec{ID: "images", Type: "dir", Content: []string{"images", "import"}}); err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t, factory.URL, 9100, "talos,pool-a")
	spec.Storage = "images"
	opts := fastOpts()
	opts.Node, opts.ImageFormat, opts.KeepImage = "pve2", talostemplate.ImageQCOW2, true
	res, err := talostemplate.Create(context.Background(), srv.Client(), spec, opts)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	conf, node, _ := srv.VMConfig(9100)
	if node != "pve2" || conf["tags"] != "pool-a;talos" || conf["template"] != "1" {
		t.Errorf("template on pve2 with the given tags: node %s, %v", node, conf)
	}
	vol := "images:import/talos-v1.13.6-ce4c9805-nocloud-amd64.qcow2"
	if res.ImportStorage != "images" || res.ImageVolume != vol || res.ImageRemoved {
		t.Errorf("the disk storage takes the qcow2 image when it has import, and it is kept: %+v", res)
	}
	var kept bool
	for _, v := range srv.Volumes() {
		kept = kept || (v.VolID == vol && v.Node == "pve2" && v.Size == imageSize)
	}
	if !kept {
		t.Errorf("the kept image is on pve2: %+v", srv.Volumes())
	}
	_, err = talostemplate.Create(context.Background(), srv.Client(), testSpec(t, factory.URL, 9101, "x"), fastOpts())
	if !errors.Is(err, talostemplate.ErrNoTarget) || !strings.Contains(err.Error(), "the cluster has the nodes pve1, pve2") {
		t.Errorf("two nodes and none named: %v", err)
	}
}

func TestCreateRefusals(t *testing.T) {
	factory := newFactory(t)
	cases := map[string]struct {
		reason string
		seed   func(t *testing.T, srv *pvefake.Server)
		vmid   int
		tags   string
		opts   func(o *talostemplate.CreateOptions)
		is     error
		msg    string
	}{
		"SameTags": {reason: "a template with the same tag set anywhere in the cluster stops the build", vmid: 9001,
			seed: func(t *testing.T, srv *pvefake.Server) {
				mustAddVM(t, srv, pvefake.VMSpec{VMID: 8000, Name: "old", Template: true, Tags: []string{"Talos", "cozystack", "talos-v1.13.6", "schematic-ce4c9805"}})
			},
			is: talostemplate.ErrTagSetTaken, msg: "a template already carries the tags " + defaultTags + ": 8000 (old) on pve"},
		"VMIDTaken": {reason: "nextid refuses a VMID in use", vmid: 8000,
			seed: func(t *testing.T, srv *pvefake.Server) {
				mustAddVM(t, srv, pvefake.VMSpec{VMID: 8000, Name: "vm"})
			},
			is: talostemplate.ErrVMIDTaken, msg: "VMID 8000 cannot be used: VM 8000 already exists (GET /cluster/nextid?vmid=8000); choose a free VMID, such as 100"},
		"ImageThere": {reason: "an image left by an earlier run is not overwritten", vmid: 9000,
			seed: func(t *testing.T, srv *pvefake.Server) {
				if _, err := srv.AddVolume(pvefake.VolumeSpec{Storage: "local", Content: "import", Name: "import/talos-v1.13.6-ce4c9805-nocloud-amd64.raw", Size: 1, Format: "raw"}); err != nil {
					t.Fatal(err)
				}
			},
			is: talostemplate.ErrImageExists, msg: "build from it with --reuse-image, or remove it with: pvesm free " + imageVolume},
		"NoImportStorage": {reason: "download-url needs a storage with the import content type", vmid: 9000,
			opts: func(o *talostemplate.CreateOptions) { o.ImportStorage = "local-lvm" },
			is:   talostemplate.ErrNoTarget, msg: "storage local-lvm does not have the import content type"},
		"UnknownNode": {reason: "a named node must exist", vmid: 9000,
			opts: func(o *talostemplate.CreateOptions) { o.Node = "pve9" },
			is:   talostemplate.ErrNoTarget, msg: "node pve9 is not in the cluster (nodes: pve)"},
		"BadFormat": {reason: "a compressed artefact cannot be imported", vmid: 9000,
			opts: func(o *talostemplate.CreateOptions) { o.ImageFormat = "raw.xz" },
			msg:  `image format "raw.xz" is not an uncompressed factory artefact`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := pvefake.NewServer(t)
			if tc.seed != nil {
				tc.seed(t, srv)
			}
			before := snapshot(srv, 8000, tc.vmid)
			srv.ResetRequests()
			opts := fastOpts()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			_, err := talostemplate.Create(context.Background(), srv.Client(), testSpec(t, factory.URL, tc.vmid, ""), opts)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%s\nerror %v\nwant %v containing %q", tc.reason, err, tc.is, tc.msg)
			}
			if tc.is != nil && !strings.Contains(err.Error(), "nothing was changed on the hypervisor") {
				t.Errorf("a refusal says nothing changed: %v", err)
			}
			if m := srv.MutatingRequests(); len(m) != 0 {
				t.Errorf("%s: a refusal writes nothing, sent %v", tc.reason, m)
			}
			if diff := cmp.Diff(before, snapshot(srv, 8000, tc.vmid)); diff != "" {
				t.Errorf("the fake changed: -before +after:\n%s", diff)
			}
		})
	}
}

func mustAddVM(t *testing.T, srv *pvefake.Server, spec pvefake.VMSpec) {
	t.Helper()
	if err := srv.AddVM(spec); err != nil {
		t.Fatal(err)
	}
}

func TestCreateReuseImage(t *testing.T) {
	factory := newFactory(t)
	srv := pvefake.NewServer(t)
	if _, err := srv.AddVolume(pvefake.VolumeSpec{Storage: "local", Content: "import", Name: "import/talos-v1.13.6-ce4c9805-nocloud-amd64.raw",
		Size: 5 << 20, Format: "raw"}); err != nil {
		t.Fatal(err)
	}
	opts := fastOpts()
	opts.ReuseImage = true
	res, err := talostemplate.Create(context.Background(), srv.Client(), testSpec(t, factory.URL, 9000, ""), opts)
	if err != nil || !res.ImageReused || !res.ImageRemoved {
		t.Fatalf("reuse: %v %+v", err, res)
	}
	for _, task := range srv.Tasks() {
		if task.Type == "download" {
			t.Errorf("a reused image is not downloaded again")
		}
	}
	if diff := cmp.Diff(wantTemplate(defaultTags), snapshot(srv, 9000).VMs[9000]); diff != "" {
		t.Errorf("template from the reused image: -want +got:\n%s", diff)
	}
}

func TestCreateTaskFailure(t *testing.T) {
	factory := newFactory(t)
	notTemplate := "VM 9000 was created but is not a template; remove it with: qm destroy 9000 (on node pve), or through the API: DELETE /api2/json/nodes/pve/qemu/9000"
	image := "image volume " + imageVolume + " on node pve; remove it with: pvesm free " + imageVolume +
		" (on node pve), or through the API: DELETE /api2/json/nodes/pve/storage/local/content/" + strings.Replace(imageVolume, "/", "%2F", 1)
	cases := map[string]struct {
		reason string
		task   string
		step   talostemplate.Step
		left   []string
	}{
		"Download": {reason: "a failed download leaves nothing", task: "download", step: talostemplate.StepDownload},
		"Create":   {reason: "PVE removes a VM whose create failed; the image stays", task: "qmcreate", step: talostemplate.StepCreate, left: []string{image}},
		"Resize":   {reason: "a VM that is not a template and the image stay", task: "resize", step: talostemplate.StepResize, left: []string{notTemplate, image}},
		"Template": {reason: "a VM that is not a template and the image stay", task: "qmtemplate", step: talostemplate.StepTemplate, left: []string{notTemplate, image}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := pvefake.NewServer(t)
			before := snapshot(srv, 9000)
			srv.FailNextTask(tc.task, "injected failure of "+tc.task)
			_, err := talostemplate.Create(context.Background(), srv.Client(), testSpec(t, factory.URL, 9000, ""), fastOpts())
			var ce *talostemplate.CreateError
			var te *talostemplate.TaskError
			if !errors.As(err, &ce) || !errors.As(err, &te) || !errors.Is(err, talostemplate.ErrTaskFailed) {
				t.Fatalf("want a *CreateError wrapping a *TaskError, got %v", err)
			}
			if ce.Step != tc.step || te.ExitStatus != "injected failure of "+tc.task || te.Type != tc.task {
				t.Errorf("step %s, task %+v", ce.Step, te)
			}
			var said []string
			for _, l := range ce.Left {
				said = append(said, l.String())
				if !strings.Contains(err.Error(), "\n  - "+l.String()) {
					t.Errorf("the error lists %q:\n%v", l, err)
				}
			}
			if diff := cmp.Diff(tc.left, said); diff != "" {
				t.Errorf("%s: leftovers -want +got:\n%s", tc.reason, diff)
			}
			if len(tc.left) == 0 && !strings.Contains(err.Error(), "nothing was left on the hypervisor") {
				t.Errorf("say that nothing is left: %v", err)
			}
			assertLeft(t, srv, ce.Left)
			for _, l := range ce.Left {
				if err := removeLeftover(context.Background(), srv.Client(), l); err != nil {
					t.Fatalf("following %q: %v", l.API, err)
				}
			}
			if diff := cmp.Diff(before, snapshot(srv, 9000)); diff != "" {
				t.Errorf("after removing what the error names the fake is as before: -before +after:\n%s", diff)
			}
		})
	}
}

// assertLeft checks that the fake holds exactly the reported leftovers
// beyond its seeded volumes: VM 9000 and the image, or not.
func assertLeft(t *testing.T, srv *pvefake.Server, left []talostemplate.Leftover) {
	t.Helper()
	var wantVM, wantImage bool
	for _, l := range left {
		wantVM = wantVM || (l.Kind == talostemplate.LeftVM && l.VMID == 9000)
		wantImage = wantImage || (l.Kind == talostemplate.LeftImage && l.VolID == imageVolume)
	}
	conf, _, hasVM := srv.VMConfig(9000)
	var hasImage, hasDisks bool
	for _, v := range srv.Volumes() {
		hasImage = hasImage || v.VolID == imageVolume
		hasDisks = hasDisks || v.Owner == 9000
	}
	if hasVM != wantVM || hasImage != wantImage || hasDisks != hasVM || (hasVM && conf["template"] == "1") {
		t.Errorf("the fake holds VM %v (template %q, disks %v) and image %v; reported %+v", hasVM, conf["template"], hasDisks, hasImage, left)
	}
}

func TestCreateCleanupFailure(t *testing.T) {
	factory := newFactory(t)
	srv := pvefake.NewServer(t)
	srv.FailNextTask("imgdel", "injected failure of imgdel")
	res, err := talostemplate.Create(context.Background(), srv.Client(), testSpec(t, factory.URL, 9000, ""), fastOpts())
	if err != nil {
		t.Fatalf("the template stands, so a failed cleanup is not an error: %v", err)
	}
	if res.ImageRemoved || len(res.Left) != 1 || res.Left[0].VolID != imageVolume {
		t.Errorf("the image is reported as left: %+v", res)
	}
	if conf, _, _ := srv.VMConfig(9000); conf["template"] != "1" {
		t.Errorf("the template is there: %v", conf)
	}
}

func TestCreateInterrupted(t *testing.T) {
	factory := newFactory(t)
	srv := pvefake.NewServer(t, pvefake.WithTaskDuration(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	opts := fastOpts()
	opts.Progress = func(p talostemplate.Progress) {
		if p.Step == talostemplate.StepDownload && p.Phase == talostemplate.PhaseLog {
			cancel() // the operator presses Ctrl-C while the image downloads
		}
	}
	_, err := talostemplate.Create(ctx, srv.Client(), testSpec(t, factory.URL, 9000, ""), opts)
	var ce *talostemplate.CreateError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) || ce.Step != talostemplate.StepDownload {
		t.Fatalf("want the download step interrupted, got %v", err)
	}
	var kinds []talostemplate.LeftoverKind
	for _, l := range ce.Left {
		kinds = append(kinds, l.Kind)
	}
	if diff := cmp.Diff([]talostemplate.LeftoverKind{talostemplate.LeftTask, talostemplate.LeftImage}, kinds); diff != "" {
		t.Errorf("the running download and its volume are left: -want +got:\n%s\n%v", diff, err)
	}
	if !strings.Contains(err.Error(), "is still running on node pve and may still change it; stop it with: pvesh delete /nodes/pve/tasks/UPID:pve:") {
		t.Errorf("the running task and how to stop it: %v", err)
	}
}

func TestCreatePermissions(t *testing.T) {
	factory := newFactory(t)
	builder := []string{"VM.Allocate", "VM.Audit", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.HWType", "VM.Config.Options",
		"VM.Config.Disk", "Datastore.AllocateSpace", "Datastore.Audit", "Datastore.Allocate", "Sys.Audit", "Sys.Modify"}
	cases := map[string]struct {
		reason string
		role   []string
		is     error
		msg    string
	}{
		"NoAllocateTemplate": {reason: "download-url needs Datastore.AllocateTemplate on the import storage", role: builder,
			is:  talostemplate.ErrPermissionDenied,
			msg: "POST /nodes/pve/storage/local/download-url: not authorized to access endpoint: 403 Permission check failed (/storage/local, Datastore.AllocateTemplate): the token lacks Datastore.AllocateTemplate on /storage/local; grant it Datastore.AllocateTemplate on /storage/local"},
		"NoVMAudit": {reason: "a token that cannot see every guest cannot prove the tag set is free",
			role: without(append(builder, "Datastore.AllocateTemplate"), "VM.Audit"), is: talostemplate.ErrIncompleteView,
			msg: "it lacks VM.Audit on /vms with propagation"},
		"Enough": {reason: "the privileges the errors name are enough", role: append(builder, "Datastore.AllocateTemplate")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := pvefake.NewServer(t)
			secret := addToken(t, srv, "TemplateBuilder", tc.role)
			_, err := talostemplate.Create(context.Background(), srv.TokenClient("build@pve!tpl", secret), testSpec(t, factory.URL, 9000, ""), fastOpts())
			if tc.is == nil {
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				return
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), secret) {
				t.Fatalf("%s:\n%v\nwant %v containing %q", tc.reason, err, tc.is, tc.msg)
			}
			if _, _, ok := srv.VMConfig(9000); ok || len(srv.Volumes()) != 0 {
				t.Errorf("nothing is written: %v", srv.Volumes())
			}
		})
	}
}

// addToken adds build@pve and its privilege-separated token tpl, both with
// a role of privs on / (propagated), and returns the token's secret.
func addToken(t *testing.T, srv *pvefake.Server, role string, privs []string) string {
	t.Helper()
	if err := srv.AddRole(role, privs...); err != nil {
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
		if err := srv.SetACL("/", kind, who, true, role); err != nil {
			t.Fatal(err)
		}
	}
	return secret
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}
