// Package talostemplate decides everything about the Talos VM template that
// the workers of a Proxmox-backed tenant cluster are linked-cloned from:
//
//   - the template's Spec and its validation (VMID, storage, Talos version,
//     schematic ID, Image Factory URL, disk size, CPU model, tags), read from a
//     chart values file's talos: block or given field by field;
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
//     error text, and why ([Select], [Explain]).
//
// Every decision is a pure function over plain values. The only I/O seam is
// [ResourceLister], which yields the answer of PVE's
// GET /cluster/resources?type=vm; [ResourcesFile] reads it from a file.
//
// The package never talks to a hypervisor, never runs the program it renders,
// and never downloads an image.
package talostemplate
