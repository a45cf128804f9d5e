package talostemplate_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// gpuMapping is a PCI mapping of one device on the fake's node pve.
var gpuMapping = pvefake.PCIMappingSpec{ID: "a100", Map: []string{"node=pve,path=0000:01:00.0,id=10de:20b5,iommugroup=12"}}

// TestCreateGPUTemplate: a token with Mapping.Use on the mapping builds a
// template with its device (q35, hostpci0 as PCI Express, the GPU tag);
// a clone of it starts on the fake, whose start runs qemu-server's checks,
// and holds the mapping's device. Each refusal sits next to the control:
// a token without Mapping.Use, and a mapping that does not exist, are
// refused at the check, before anything is written.
func TestCreateGPUTemplate(t *testing.T) {
	factory := newFactory(t)
	builder := []string{"VM.Allocate", "VM.Audit", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.HWType", "VM.Config.Options",
		"VM.Config.Disk", "Datastore.AllocateSpace", "Datastore.Audit", "Datastore.Allocate", "Datastore.AllocateTemplate", "Sys.Audit", "Sys.Modify"}
	cases := map[string]struct {
		reason  string
		role    []string
		mapping *pvefake.PCIMappingSpec
		err     string
	}{
		"Built": {reason: "Mapping.Use on the mapping is what the devices need", role: append(builder, "Mapping.Use"), mapping: &gpuMapping},
		"NoMappingUse": {reason: "qemu-server checks Mapping.Use on the mapping when a create sets it", role: builder, mapping: &gpuMapping,
			err: "GET /api2/json/cluster/mapping/pci/a100: not authorized to access endpoint: 403 Permission check failed: This call needs Mapping.Use on /mapping/pci/a100"},
		"NoMapping": {reason: "a mapping that does not exist is refused before the download", role: append(builder, "Mapping.Use"),
			err: "PCI mapping a100 does not exist: create it first"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := pvefake.NewServer(t)
			if tc.mapping != nil {
				if err := srv.AddPCIMapping(*tc.mapping); err != nil {
					t.Fatal(err)
				}
			}
			secret := addToken(t, srv, "TemplateBuilder", tc.role)
			spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: "9000", Storage: "local-lvm", TalosVersion: talosVersion,
				SchematicID: agentSchematic, FactoryURL: factory.URL, PCIMappings: []string{"a100"}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = talostemplate.Create(context.Background(), srv.TokenClient("build@pve!tpl", secret), spec, fastOpts())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || (name == "NoMappingUse") != errors.Is(err, talostemplate.ErrPermissionDenied) {
					t.Fatalf("%s: Create = %v; want %q", tc.reason, err, tc.err)
				}
				if _, _, ok := srv.VMConfig(9000); ok || len(srv.Volumes()) != 0 {
					t.Errorf("%s: nothing is written: %v", tc.reason, srv.Volumes())
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			want := wantTemplate("cozystack;gpu-1x-a100;schematic-ce4c9805;talos;talos-v1.13.6")
			want["machine"], want["hostpci0"] = "q35", "mapping=a100,pcie=1"
			if diff := cmp.Diff(want, snapshot(srv, 9000).VMs[9000]); diff != "" {
				t.Errorf("template 9000: -want +got:\n%s", diff)
			}
			startClone(t, srv, 9000, 100)
			wantDevs := []pvefake.PCIDevice{{Key: "hostpci0", Mapping: "a100", Node: "pve", Path: "0000:01:00.0"}}
			if diff := cmp.Diff(wantDevs, srv.VMPCIDevices(100)); diff != "" {
				t.Errorf("the started clone's devices: -want +got:\n%s", diff)
			}
		})
	}
}

// startClone full-clones template from as newid and starts it, as root.
func startClone(t *testing.T, srv *pvefake.Server, from, newid int) {
	t.Helper()
	ctx := context.Background()
	c := srv.Client()
	if err := c.Post(ctx, "/nodes/pve/qemu/"+strconv.Itoa(from)+"/clone", map[string]any{"newid": newid, "full": 1}, nil); err != nil {
		t.Fatalf("clone: %v", err)
	}
	node, err := c.Node(ctx, "pve")
	if err != nil {
		t.Fatal(err)
	}
	vm, err := node.VirtualMachine(ctx, newid)
	if err != nil {
		t.Fatal(err)
	}
	task, err := vm.Start(ctx)
	if err == nil {
		err = task.Wait(ctx, time.Millisecond, 5*time.Second)
	}
	if err == nil && task.IsFailed {
		err = errors.New(task.ExitStatus)
	}
	if err != nil {
		t.Fatalf("the clone does not start: %v", err)
	}
}
