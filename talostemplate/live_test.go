package talostemplate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/capread"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// selectGuests are seeded into the fake; selectFile is the same cluster as
// pvesh get /cluster/resources --type vm --output-format json prints it.
var selectGuests = []pvefake.VMSpec{
	{VMID: 100, Name: "worker-a", Node: "pve1", Tags: []string{"cozystack", "talos"}},
	{VMID: 9000, Name: "talos-old", Node: "pve1", Template: true, Tags: []string{"cozystack", "talos", "talos-v1.12.0"}},
	{VMID: 9001, Name: "talos-new", Node: "pve2", Template: true, Tags: []string{"cozystack", "talos", "talos-v1.13.6"}},
	{VMID: 9002, Name: "talos-copy", Node: "pve2", Template: true, Tags: []string{"cozystack", "talos", "talos-v1.13.6"}},
	{VMID: 9003, Name: "bare", Node: "pve1", Template: true},
}

const selectFile = `[
 {"id":"qemu/100","type":"qemu","vmid":100,"name":"worker-a","node":"pve1","template":0,"tags":"cozystack;talos","status":"stopped"},
 {"id":"qemu/9000","type":"qemu","vmid":9000,"name":"talos-old","node":"pve1","template":1,"tags":"cozystack;talos;talos-v1.12.0"},
 {"id":"qemu/9001","type":"qemu","vmid":9001,"name":"talos-new","node":"pve2","template":1,"tags":"cozystack;talos;talos-v1.13.6"},
 {"id":"qemu/9002","type":"qemu","vmid":9002,"name":"talos-copy","node":"pve2","template":1,"tags":"cozystack;talos;talos-v1.13.6"},
 {"id":"qemu/9003","type":"qemu","vmid":9003,"name":"bare","node":"pve1","template":1}
]`

func TestLiveResourcesMatchFile(t *testing.T) {
	srv := pvefake.NewServer(t, pvefake.WithNodes("pve1", "pve2"))
	for _, g := range selectGuests {
		mustAddVM(t, srv, g)
	}
	file := filepath.Join(t.TempDir(), "resources.json")
	if err := os.WriteFile(file, []byte(selectFile), 0o600); err != nil {
		t.Fatal(err)
	}
	live := talostemplate.LiveResources{Client: srv.Client()}
	cases := map[string]struct {
		reason   string
		selector []string
		opts     talostemplate.SelectOptions
	}{
		"One":        {reason: "one template carries the set", selector: []string{"cozystack", "talos", "talos-v1.12.0"}},
		"Two":        {reason: "two templates carry the set", selector: []string{"cozystack", "talos", "talos-v1.13.6"}},
		"None":       {reason: "no template carries the subset exactly", selector: []string{"cozystack", "talos"}},
		"BestSubset": {reason: "v0.8 subset policies", selector: []string{"talos"}, opts: talostemplate.SelectOptions{Capmox: talostemplate.CapmoxV08, Policy: talostemplate.MatchBestSubset}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want, wantErr := talostemplate.SelectFrom(context.Background(), talostemplate.ResourcesFile(file), tc.selector, tc.opts)
			got, gotErr := talostemplate.SelectFrom(context.Background(), live, tc.selector, tc.opts)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: selection over the API differs from the file: -file +api:\n%s", tc.reason, diff)
			}
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Errorf("%s: errors differ: file %v, api %v", tc.reason, wantErr, gotErr)
			}
		})
	}
}

func TestLiveResourcesErrors(t *testing.T) {
	srv := pvefake.NewServer(t)
	if err := srv.InjectError(pvefake.Fault{Path: `^/cluster/resources$`, Status: 500, Message: "cluster not ready - no quorum?"}); err != nil {
		t.Fatal(err)
	}
	_, err := talostemplate.LiveResources{Client: srv.Client()}.ListVMResources(context.Background())
	var apiErr *proxmox.APIError
	if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "cannot read the cluster's guests (GET /cluster/resources?type=vm): 500 cluster not ready - no quorum?") {
		t.Errorf("the API error is wrapped with the call: %v", err)
	}
}

func TestParseUPIDNode(t *testing.T) {
	cases := map[string]struct {
		reason string
		upid   string
		node   string
		ok     bool
	}{
		"Token":     {reason: "a task a token started", upid: "UPID:pve2:00000FA1:00006D67:6B0D2A88:download:talos.raw:root@pam!pxfake:", node: "pve2", ok: true},
		"NoID":      {reason: "a task without an id", upid: "UPID:node-1:0000ABCD:00001234:65A0B1C2:vzdump::root@pam:", node: "node-1", ok: true},
		"Missing":   {reason: "too few fields", upid: "UPID:pve:0000ABCD:00001234:65A0B1C2:vzdump:root@pam:"},
		"NotHex":    {reason: "the pid is hex", upid: "UPID:pve:0000XBCD:00001234:65A0B1C2:vzdump::root@pam:"},
		"NoPrefix":  {reason: "not a UPID", upid: "pve:0000ABCD:00001234:65A0B1C2:vzdump::root@pam:"},
		"BadNode":   {reason: "a node name is a PVE name", upid: "UPID:../x:0000ABCD:00001234:65A0B1C2:vzdump::root@pam:"},
		"NoTrailer": {reason: "a UPID ends in a colon", upid: "UPID:pve:0000ABCD:00001234:65A0B1C2:vzdump::root@pam"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node, ok := talostemplate.ParseUPIDNode(tc.upid)
			if node != tc.node || ok != tc.ok {
				t.Errorf("%s: ParseUPIDNode(%q) = %q, %v; want %q, %v", tc.reason, tc.upid, node, ok, tc.node, tc.ok)
			}
		})
	}
}

// FuzzParseUPIDNode: a UPID that parses starts with UPID:<node>: and the
// node is a single safe path segment; anything else is refused, never a panic.
func FuzzParseUPIDNode(f *testing.F) {
	f.Add("UPID:pve2:00000FA1:00006D67:6B0D2A88:download:talos.raw:root@pam!pxfake:")
	f.Add("UPID:pve:0000ABCD:00001234:65A0B1C2:vzdump::root@pam:")
	f.Add("UPID:::::::::")
	f.Add("UPID:a/b:1:2:3:x:y:z:")
	f.Fuzz(func(t *testing.T, upid string) {
		node, ok := talostemplate.ParseUPIDNode(upid)
		if !ok {
			if node != "" {
				t.Errorf("a refused UPID gives no node: %q", node)
			}
			return
		}
		if !strings.HasPrefix(upid, "UPID:"+node+":") || node == "" || strings.ContainsAny(node, "/?#%:\n ") {
			t.Errorf("ParseUPIDNode(%q) = %q", upid, node)
		}
	})
}

func TestParsePermissionCheck(t *testing.T) {
	cases := map[string]struct {
		reason     string
		msg        string
		path, priv string
		ok         bool
	}{
		"Storage":  {reason: "PVE's text", msg: "Permission check failed (/storage/local, Datastore.AllocateTemplate)", path: "/storage/local", priv: "Datastore.AllocateTemplate", ok: true},
		"Wrapped":  {reason: "inside go-proxmox's error text", msg: "not authorized to access endpoint: 403 Permission check failed (/vms/9000, VM.Allocate)", path: "/vms/9000", priv: "VM.Allocate", ok: true},
		"Root":     {reason: "the root path", msg: "Permission check failed (/, Sys.Modify)", path: "/", priv: "Sys.Modify", ok: true},
		"Bare":     {reason: "PVE does not always name them", msg: "Permission check failed"},
		"Other403": {reason: "other texts", msg: "403 Forbidden"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path, priv, ok := talostemplate.ParsePermissionCheck(tc.msg)
			if diff := cmp.Diff([]any{tc.path, tc.priv, tc.ok}, []any{path, priv, ok}); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// FuzzParsePermissionCheck: what parses renders back into a message that
// parses to the same path and privilege, and is part of the input.
func FuzzParsePermissionCheck(f *testing.F) {
	f.Add("Permission check failed (/storage/local, Datastore.AllocateTemplate)")
	f.Add("403 Permission check failed (/, Sys.Audit)")
	f.Add("Permission check failed (/vms/1, VM.Allocate) (/x, Y)")
	f.Add("Permission check failed")
	f.Fuzz(func(t *testing.T, msg string) {
		path, priv, ok := talostemplate.ParsePermissionCheck(msg)
		if !ok {
			return
		}
		again := "Permission check failed (" + path + ", " + priv + ")"
		if !strings.Contains(msg, again) {
			t.Errorf("ParsePermissionCheck(%q) = %q, %q: not in the message", msg, path, priv)
		}
		p2, v2, ok2 := talostemplate.ParsePermissionCheck(again)
		if !ok2 || p2 != path || v2 != priv {
			t.Errorf("round trip of %q: %q %q %v", again, p2, v2, ok2)
		}
	})
}

// TestResourcesFileBounded: ResourcesFile reads at most MaxResourcesBytes,
// the cap the API client puts on the same answer: an endless device is
// refused (ErrTooLarge) instead of growing in memory; a file of guests is
// read (the control).
func TestResourcesFileBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resources.json")
	if err := os.WriteFile(path, []byte(`[{"vmid":9000,"node":"pve1","template":1,"tags":"talos"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if rs, err := talostemplate.ResourcesFile(path).ListVMResources(context.Background()); err != nil || len(rs) != 1 {
		t.Fatalf("the control: %v, %v", rs, err)
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := talostemplate.ResourcesFile("/dev/zero").ListVMResources(context.Background())
	if !errors.Is(err, capread.ErrTooLarge) || !strings.Contains(err.Error(), "/dev/zero is larger than 16 MiB") {
		t.Errorf("/dev/zero: %v", err)
	}
}
