package capmoxrender

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// InstallDisk is where a Proxmox worker's system disk appears: capmox and
// the template use scsi0 on virtio-scsi, so the guest sees /dev/sda.
const InstallDisk = "/dev/sda"

type talosPatch struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

type talosConfigTemplateSpec struct {
	Template struct {
		Spec struct {
			GenerateType  string       `json:"generateType"`
			TalosVersion  string       `json:"talosVersion"`
			ConfigPatches []talosPatch `json:"configPatches"`
		} `json:"spec"`
	} `json:"template"`
}

// talosMinor is the vX.Y a TalosConfigTemplate's talosVersion takes.
func talosMinor(v string) string {
	parts := strings.SplitN(strings.SplitN(v, "-", 2)[0], ".", 3)
	return parts[0] + "." + parts[1]
}

// renderTalosConfigTemplate renders the worker machine config with the
// proxmox differences: the pool's nameservers instead of the management
// CoreDNS, kubelet cloud-provider=external so the CCM initialises the
// Node, and a hosts entry for the control plane endpoint (at
// HostEntriesPatchIndex: the address, or an empty list the host-entries Job
// fills); a pool with NVIDIA GPUs loads NVIDIAKernelModules and sets
// NVIDIASysctls. Its name carries a hash of its spec: the spec is immutable, so a
// change makes a new template.
func renderTalosConfigTemplate(p nodesPlan) (*unstructured.Unstructured, error) {
	var s talosConfigTemplateSpec
	t := &s.Template.Spec
	t.GenerateType = "worker"
	t.TalosVersion = talosMinor(p.talos.Version)
	t.ConfigPatches = []talosPatch{
		{Op: "add", Path: "/machine/network/nameservers", Value: p.dns},
		{Op: "add", Path: "/machine/kubelet/extraArgs", Value: map[string]string{"cloud-provider": "external"}},
		{Op: "add", Path: "/machine/install", Value: map[string]string{
			"disk":  InstallDisk,
			"image": p.talos.InstallerRepository + "/" + p.talos.SchematicID + ":" + p.talos.Version,
		}},
		{Op: "add", Path: "/cluster/controlPlane", Value: map[string]string{"endpoint": "https://" + ControlPlaneHost(p.release, p.ns) + ":6443"}},
		{Op: "add", Path: HostEntriesPath, Value: hostEntries(p)},
		// After HostEntriesPatchIndex, which the host-entries Job patches.
		{Op: "add", Path: "/machine/kubelet/extraConfig", Value: p.kubelet.extraConfig()},
	}
	if len(p.mirrors) > 0 {
		t.ConfigPatches = append(t.ConfigPatches, talosPatch{Op: "add", Path: "/machine/registries", Value: map[string]any{"mirrors": p.mirrors}})
	}
	if p.gpus != nil && p.gpus.nvidia {
		modules := make([]map[string]string, len(NVIDIAKernelModules))
		for i, m := range NVIDIAKernelModules {
			modules[i] = map[string]string{"name": m}
		}
		t.ConfigPatches = append(t.ConfigPatches, talosPatch{Op: "add", Path: "/machine/kernel", Value: map[string]any{"modules": modules}},
			talosPatch{Op: "add", Path: "/machine/sysctls", Value: NVIDIASysctls})
	}
	h, err := contentHash(s, 6)
	if err != nil {
		return nil, err
	}
	return object(TalosAPIVersion, KindTalosConfigTmpl, p.ns, p.release+"-"+p.group+"-"+h, nil, s)
}
