package talostemplate_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// nvidiaSchematicID is NVIDIASchematic's ID, as docs/talostemplate.md
// shows `pxsubstrate talos schematic-id` printing it.
const nvidiaSchematicID = "990731763242a6b3cf735e49d0f550ce4068b4d0e7f4dfbb49a31799b698877e"

func TestNVIDIASchematic(t *testing.T) {
	s := talostemplate.NVIDIASchematic()
	id, err := s.ID()
	if err != nil || id != nvidiaSchematicID {
		t.Fatalf("ID() = %s, %v; want %s", id, err, nvidiaSchematicID)
	}
	canon, err := s.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `customization:
    systemExtensions:
        officialExtensions:
            - siderolabs/nonfree-kmod-nvidia-production
            - siderolabs/nvidia-container-toolkit-production
            - siderolabs/qemu-guest-agent
`
	if diff := cmp.Diff(want, string(canon)); diff != "" {
		t.Errorf("canonical text: -want +got:\n%s", diff)
	}
	if back, err := talostemplate.SchematicID(canon); err != nil || back != id {
		t.Errorf("the canonical text reads back as %s, %v", back, err)
	}
	if known, ok := talostemplate.KnownSchematic(id); !ok || !cmp.Equal(known, s) {
		t.Errorf("KnownSchematic(%s) = %v, %v: the NVIDIA schematic is known by its ID", id, known, ok)
	}
	if ws, err := talostemplate.CheckSchematic(id, nil, false); err != nil || len(ws) != 0 {
		t.Errorf("CheckSchematic by ID alone: %v, %v; want no warning (it carries the agent)", ws, err)
	}
}

// gpuInputs is the chart-default template with PCI devices.
func gpuInputs(mappings ...string) talostemplate.Inputs {
	return talostemplate.Inputs{VMID: "9001", Storage: "local-lvm", TalosVersion: talosVersion, SchematicID: nvidiaSchematicID,
		PCIMappings: mappings}
}

func TestGPUSpec(t *testing.T) {
	cases := map[string]struct {
		reason   string
		in       talostemplate.Inputs
		tags     []string
		hostpci  []talostemplate.Param
		err      string
		errField string
	}{
		"One": {reason: "one device: its tag joins the default tags, hostpci0 on a q35 machine", in: gpuInputs("a100"),
			tags:    []string{"cozystack", "gpu-1x-a100", "schematic-99073176", "talos", "talos-v1.13.6"},
			hostpci: []talostemplate.Param{{Key: "machine", Value: "q35"}, {Key: "hostpci0", Value: "mapping=a100,pcie=1"}}},
		"Two": {reason: "a mapping listed twice is two devices", in: gpuInputs("l40s", "l40s"),
			tags: []string{"cozystack", "gpu-2x-l40s", "schematic-99073176", "talos", "talos-v1.13.6"},
			hostpci: []talostemplate.Param{{Key: "machine", Value: "q35"}, {Key: "hostpci0", Value: "mapping=l40s,pcie=1"},
				{Key: "hostpci1", Value: "mapping=l40s,pcie=1"}}},
		"UpperCase": {reason: "a case-sensitive id gets an unambiguous tag", in: gpuInputs("RTX_A4000"),
			tags:    []string{"cozystack", "gpu-1x-+r+t+x_+a4000", "schematic-99073176", "talos", "talos-v1.13.6"},
			hostpci: []talostemplate.Param{{Key: "machine", Value: "q35"}, {Key: "hostpci0", Value: "mapping=RTX_A4000,pcie=1"}}},
		"GivenTags": {reason: "given tags get the GPU tag too, once", in: withTags(gpuInputs("a100"), "gpu,GPU-1x-a100"),
			tags:    []string{"gpu", "gpu-1x-a100"},
			hostpci: []talostemplate.Param{{Key: "machine", Value: "q35"}, {Key: "hostpci0", Value: "mapping=a100,pcie=1"}}},
		"BadID": {reason: "a mapping id is pve-configid", in: gpuInputs("1gpu"), errField: "pciMappings",
			err: "PCI mapping 1gpu (device 1) is not a Proxmox VE mapping id (a letter, then one or more letters, digits, - or _, as pvesh get /cluster/mapping/pci lists it)"},
		"TwoMappings": {reason: "a worker has one GPU type", in: gpuInputs("a100", "l40s"), errField: "pciMappings",
			err: "the PCI devices come from two mappings, a100 and l40s"},
		"Seventeen": {reason: "hostpci0 to hostpci15", in: gpuInputs(slices.Repeat([]string{"a100"}, 17)...), errField: "pciMappings",
			err: "17 PCI devices are more than a VM takes (hostpci0 to hostpci15)"},
		"OtherCount": {reason: "a tag naming other devices is refused", in: withTags(gpuInputs("a100"), "cozystack,gpu-2x-a100"), errField: "tags",
			err: "template tag gpu-2x-a100 names other GPUs than the template's: the template carries 1 device(s) of PCI mapping a100, tagged gpu-1x-a100"},
		"TagWithoutDevices": {reason: "no GPU tag on a template without devices", in: withTags(gpuInputs(), "cozystack,gpu-1x-a100"), errField: "tags",
			err: "template tag gpu-1x-a100 names other GPUs than the template's: the template carries no PCI devices"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := talostemplate.NewSpec(tc.in)
			if tc.err != "" {
				var ie *talostemplate.InvalidError
				if !errors.As(err, &ie) || ie.Field != tc.errField || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s: NewSpec = %v; want a %s error containing %q", tc.reason, err, tc.errField, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.tags, s.Tags); diff != "" {
				t.Errorf("%s: tags -want +got:\n%s", tc.reason, diff)
			}
			params := talostemplate.CreateParams(s, "local:import/x.raw")
			if diff := cmp.Diff(tc.hostpci, params[len(params)-len(tc.hostpci):]); diff != "" {
				t.Errorf("%s: the last create parameters -want +got:\n%s", tc.reason, diff)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("%s: NewSpec's spec does not validate: %v", tc.reason, err)
			}
		})
	}
}

func withTags(in talostemplate.Inputs, tags string) talostemplate.Inputs {
	in.Tags = tags
	return in
}

// TestGPUSpecValidate: a spec filled by hand must carry the tag of its
// devices, and only that GPU tag; the control validates.
func TestGPUSpecValidate(t *testing.T) {
	good, err := talostemplate.NewSpec(gpuInputs("a100", "a100"))
	if err != nil {
		t.Fatal(err)
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("the control: %v", err)
	}
	if m, n := good.GPUs(); m != "a100" || n != 2 || good.GPUTag() != "gpu-2x-a100" {
		t.Errorf("GPUs() = %s, %d; GPUTag() = %s", m, n, good.GPUTag())
	}
	noTag := good
	noTag.Tags = slices.DeleteFunc(slices.Clone(good.Tags), func(s string) bool { return s == "gpu-2x-a100" })
	if err := noTag.Validate(); err == nil || !strings.Contains(err.Error(), "the template carries PCI devices but not their tag gpu-2x-a100") {
		t.Errorf("a GPU spec without its tag: %v", err)
	}
	fewer := good
	fewer.PCIMappings = []string{"a100"}
	if err := fewer.Validate(); err == nil || !strings.Contains(err.Error(), "template tag gpu-2x-a100 names other GPUs than the template's") {
		t.Errorf("a spec whose tag counts other devices: %v", err)
	}
	if _, err := talostemplate.Program(noTag); err == nil {
		t.Error("Program renders a spec Validate refuses")
	}
	if p := talostemplate.CreateParams(talostemplate.Spec{VMID: 9000}, "x"); slices.ContainsFunc(p, func(p talostemplate.Param) bool {
		return p.Key == "machine" || strings.HasPrefix(p.Key, "hostpci")
	}) {
		t.Errorf("a template without devices keeps PVE's default machine and no hostpci: %v", p)
	}
}

// TestGPUPoolSnippet: a GPU template's pool snippet names a gpus entry
// per device and the GPU tag among the templateTags.
func TestGPUPoolSnippet(t *testing.T) {
	s, err := talostemplate.NewSpec(gpuInputs("a100", "a100"))
	if err != nil {
		t.Fatal(err)
	}
	want := "talos:\n  version: \"v1.13.6\"\n  schematicID: \"" + nvidiaSchematicID + "\"\ngpus:\n  - name: \"a100\"\n  - name: \"a100\"\n" +
		"proxmox:\n  templateTags:\n    - \"cozystack\"\n    - \"gpu-2x-a100\"\n    - \"schematic-99073176\"\n    - \"talos\"\n    - \"talos-v1.13.6\"\n"
	if diff := cmp.Diff(want, talostemplate.PoolSnippet(s)); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
