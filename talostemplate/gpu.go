package talostemplate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Official extensions of an NVIDIA GPU worker: the proprietary kernel
// modules and the container toolkit, of NVIDIA's production driver branch.
const (
	ExtensionNVIDIAKernelModules    = "siderolabs/nonfree-kmod-nvidia-production"
	ExtensionNVIDIAContainerToolkit = "siderolabs/nvidia-container-toolkit-production"
)

// GPUMachine is the machine type of a template with PCI devices: each
// device is passed through as PCI Express (pcie=1), which qemu-server
// refuses to start on its default i440fx machine ("q35 machine model is
// not enabled").
const GPUMachine = "q35"

// NVIDIASchematic is the Image Factory schematic of a template for NVIDIA
// GPU workers: the default schematic's qemu-guest-agent with NVIDIA's
// proprietary kernel modules and container toolkit (production branch),
// in name order. Its ID (Schematic.ID) is what the pool's
// talos.schematicID and the template's --schematic-id name, and the
// factory serves its images once the schematic is posted to it.
func NVIDIASchematic() *Schematic {
	return &Schematic{Customization: Customization{SystemExtensions: SystemExtensions{OfficialExtensions: []string{
		ExtensionNVIDIAKernelModules, ExtensionNVIDIAContainerToolkit, ExtensionGuestAgent,
	}}}}
}

// GPUs returns the template's PCI resource mapping and how many of its
// devices the template carries; "" and 0 for a template without any.
func (s Spec) GPUs() (mapping string, count int) {
	if len(s.PCIMappings) == 0 {
		return "", 0
	}
	return s.PCIMappings[0], len(s.PCIMappings)
}

// GPUTag is the tag that marks the template as carrying its devices
// (capmox.GPUTag), "" for a template without any.
func (s Spec) GPUTag() string {
	if m, n := s.GPUs(); n > 0 {
		return capmox.GPUTag(m, n)
	}
	return ""
}

// hostPCI is the hostpciN option of each device: the mapping, passed
// through as PCI Express.
func (s Spec) hostPCI() []Param {
	out := make([]Param, len(s.PCIMappings))
	for i, id := range s.PCIMappings {
		out[i] = Param{"hostpci" + strconv.Itoa(i), "mapping=" + id + ",pcie=1"}
	}
	return out
}

// checkPCIMappings refuses PCI mappings a template cannot carry: an id
// that is not a Proxmox VE mapping id, more devices than hostpci0 to
// hostpci15, or devices of two mappings (a worker has one GPU type: the
// cluster autoscaler's gpu-type of its pool names one mapping).
func checkPCIMappings(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	var errs []error
	for i, id := range ids {
		if !capmox.ValidMappingID(id) {
			errs = append(errs, invalid("pciMappings", id, fmt.Sprintf("PCI mapping %s (device %d) is not a Proxmox VE mapping id", show(id), i+1),
				"a letter, then one or more letters, digits, - or _, as pvesh get /cluster/mapping/pci lists it"))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(ids) > capmox.MaxGPUs {
		return invalid("pciMappings", strings.Join(ids, ","), fmt.Sprintf("%d PCI devices are more than a VM takes (hostpci0 to hostpci%d)", len(ids), capmox.MaxGPUs-1),
			"give at most 16")
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			return invalid("pciMappings", strings.Join(ids, ","), fmt.Sprintf("the PCI devices come from two mappings, %s and %s", show(ids[0]), show(id)),
				"a template carries devices of one mapping, repeated once per device: a pool's workers have one GPU type, which the autoscaler's gpu-type names")
		}
	}
	return nil
}

// checkGPUTag refuses a tag that names other devices than the template
// carries (capmox.MismatchedGPUTag), and a GPU template without its own
// GPU tag.
func checkGPUTag(tags []string, s Spec) error {
	m, n := s.GPUs()
	if i, bad := capmox.MismatchedGPUTag(tags, m, n); bad {
		what := "the template carries no PCI devices"
		if n > 0 {
			what = fmt.Sprintf("the template carries %d device(s) of PCI mapping %s, tagged %s", n, m, capmox.GPUTag(m, n))
		}
		return invalid("tags", tags[i], "template tag "+show(tags[i])+" names other GPUs than the template's: "+what,
			"a pool selects a GPU template by the tag of its devices; leave GPU tags to --pci-mapping")
	}
	if n > 0 && !slices.Contains(tags, capmox.GPUTag(m, n)) {
		return invalid("tags", strings.Join(tags, ","), "the template carries PCI devices but not their tag "+capmox.GPUTag(m, n),
			"add it: pools with gpus select the template by it")
	}
	return nil
}

// checkMapping makes sure the template's PCI mapping exists before the
// template is built: qemu-server takes hostpciN: mapping=<id> on create
// without reading the mapping, and only a clone's start would fail.
func checkMapping(ctx context.Context, c pveapi.Client, id string) error {
	if id == "" {
		return nil
	}
	path := pveapi.Path("cluster", "mapping", "pci", id)
	var got struct {
		Map []string `json:"map"`
	}
	err := c.Get(ctx, path, &got)
	var apiErr *proxmox.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusForbidden:
		return permissionError("GET /api2/json"+path, "Mapping.Use on /mapping/pci/"+id, err)
	case err != nil && strings.Contains(err.Error(), "not found"):
		return fmt.Errorf("PCI mapping %s does not exist: create it first (Datacenter, Resource Mappings; or pvesh create /cluster/mapping/pci --id %s --map node=NODE,path=PCI-PATH,id=VENDOR:DEVICE), or correct --pci-mapping",
			id, id)
	case err != nil:
		return fmt.Errorf("cannot read PCI mapping %s (GET /api2/json%s): %w", id, termsafe.Cut(path), err)
	}
	return nil
}
