// Package talostemplate decides everything about the Talos VM template that
// the workers of a Proxmox-backed tenant cluster are linked-cloned from:
//
//   - the template's Spec and its validation (VMID, storage, Talos version,
//     schematic ID, Image Factory URL, disk size, CPU model, tags, PCI
//     mappings), read from a chart values file's talos: block or given field
//     by field;
//   - GPU templates: devices of a Proxmox VE PCI resource mapping
//     (hostpciN: mapping=<id>,pcie=1 on a q35 machine), the tag pools with
//     gpus select them by (capmox.GPUTag), and the NVIDIA schematic
//     ([NVIDIASchematic]);
//   - tag normalisation ([ParseTags]) and the default tag set ([DefaultTags]),
//     and the rule that one tag set names at most one template in a cluster
//     ([CheckTagSetFree]);
//   - Image Factory schematic IDs ([ParseSchematic], [Schematic.ID]), computed
//     the way the factory computes them, and whether a schematic fits a VM
//     template ([CheckSchematic]);
//   - the reviewable root shell program that builds the template on a
//     Proxmox VE node ([Program]) and the values a pool selects it with
//     ([PoolSnippet]);
//   - which template capmox clones for a tag selector, with capmox's exact
//     error text, and why ([Select], [Explain]);
//   - building the template through the Proxmox VE API, without ssh
//     ([Create], [CreateParams]): download-url of the factory's uncompressed
//     image, create with import-from, resize, convert to a template.
//
// Every decision is a pure function over plain values. I/O goes only through
// two seams: [ResourceLister], which yields the answer of PVE's
// GET /cluster/resources?type=vm ([ResourcesFile] reads it from a file,
// [LiveResources] from the API), and the API client [Create] is given.
//
// The package never runs the program it renders, never uses ssh, never turns
// off certificate checks for download-url, and never rolls back: when
// [Create] fails it reports exactly what it left on the hypervisor and how to
// remove it.
package talostemplate
