package talostemplate_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

const (
	agentSchematic = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	talosVersion   = "v1.13.6"
	// imageSize is the size of the factory's fake image: 64 KiB.
	imageSize = 64 << 10
)

// newFactory serves the uncompressed nocloud artefacts of any schematic and
// version, as the Image Factory does, and 404 for everything else (the .xz
// image included: download-url must never be pointed at it for import).
func newFactory(t testing.TB) *httptest.Server {
	t.Helper()
	image := bytes.Repeat([]byte{0xeb, 0x63, 0x90}, imageSize/3+1)[:imageSize]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.Path, "/")
		if r.Method != http.MethodGet || len(parts) != 5 || parts[1] != "image" ||
			!slices.Contains([]string{"nocloud-amd64.raw", "nocloud-amd64.qcow2"}, parts[4]) {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(image)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// testSpec is the chart-default template on the factory: VMID on local-lvm.
func testSpec(t fataler, factory string, vmid int, tags string) talostemplate.Spec {
	t.Helper()
	s, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: fmt.Sprint(vmid), Storage: "local-lvm", TalosVersion: talosVersion,
		SchematicID: agentSchematic, FactoryURL: factory, Tags: tags})
	if err != nil {
		t.Fatalf("NewSpec: %v", err)
	}
	return s
}

// fataler is the part of testing.TB that rapid.T has too.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// fastOpts polls often: the fake's tasks end at once unless told otherwise.
func fastOpts() talostemplate.CreateOptions {
	return talostemplate.CreateOptions{PollInterval: time.Millisecond}
}

// world is what the fake holds that Create can change: guests by VMID with
// their configuration, and volumes.
type world struct {
	VMs     map[int]map[string]string
	Volumes []pvefake.VolumeInfo
}

// volatileKeys are the options PVE generates randomly on create.
var volatileKeys = []string{"smbios1", "vmgenid", "meta"}

func snapshot(srv *pvefake.Server, vmids ...int) world {
	w := world{VMs: map[int]map[string]string{}, Volumes: srv.Volumes()}
	for _, id := range vmids {
		if conf, _, ok := srv.VMConfig(id); ok {
			for _, k := range volatileKeys {
				delete(conf, k)
			}
			w.VMs[id] = conf
		}
	}
	return w
}

// removeLeftover runs a leftover's API call, as an operator would, and
// waits for the task it starts.
func removeLeftover(ctx context.Context, c *proxmox.Client, l talostemplate.Leftover) error {
	method, path, ok := strings.Cut(l.API, " ")
	path, found := strings.CutPrefix(path, "/api2/json")
	if !ok || !found || method != http.MethodDelete {
		return fmt.Errorf("leftover API call %q is not DELETE /api2/json/...", l.API)
	}
	var upid proxmox.UPID
	if err := c.Delete(ctx, path, &upid); err != nil {
		return err
	}
	if upid == "" {
		return nil
	}
	return proxmox.NewTask(upid, c).Wait(ctx, time.Millisecond, 10*time.Second)
}
