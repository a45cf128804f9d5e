package talostemplate

import (
	"fmt"
	"strings"
)

// Official extension names the template cares about.
const (
	ExtensionGuestAgent = "siderolabs/qemu-guest-agent"
	ExtensionZFS        = "siderolabs/zfs"
	ExtensionLLDPD      = "siderolabs/lldpd"
)

// WarningReason classifies a Warning.
type WarningReason string

// Warning reasons.
const (
	// ReasonAgentExtensionMissing: the schematic has no QEMU guest agent.
	ReasonAgentExtensionMissing WarningReason = "AgentExtensionMissing"
	// ReasonAgentDisabled: the schematic has the agent, the template does not enable it.
	ReasonAgentDisabled WarningReason = "AgentDisabled"
	// ReasonExtensionMayBlockBoot: an extension whose service may never come up on a VM.
	ReasonExtensionMayBlockBoot WarningReason = "ExtensionMayBlockBoot"
	// ReasonSchematicUnchecked: the schematic's content is unknown, so nothing was checked.
	ReasonSchematicUnchecked WarningReason = "SchematicUnchecked"
)

// Warning is a finding that does not stop the template from being built.
type Warning struct {
	Reason  WarningReason `json:"reason"`
	Message string        `json:"message"`
}

func (w Warning) String() string { return w.Message }

// bootTimeoutLoop explains what Talos does when an extension service never
// comes up: the boot sequence waits for it, fails at the boot timeout and the
// machine reboots, again and again.
const bootTimeoutLoop = "Talos never finishes its boot sequence and reboots the VM at the boot timeout (70 minutes), over and over"

// CheckSchematic decides whether the schematic with ID id fits a VM
// template whose agent setting is !disableAgent. s is the schematic's
// content; when it is nil, a schematic the package knows by ID (see
// KnownSchematic) is checked instead, and any other ID gives a
// ReasonSchematicUnchecked warning.
//
// A schematic with the zfs extension is refused with *UnfitSchematicError.
// The agent rules give warnings: a schematic with qemu-guest-agent needs the
// agent enabled on the VM, and one without it leaves nothing to answer the
// agent capmox and PVE talk to.
func CheckSchematic(id string, s *Schematic, disableAgent bool) ([]Warning, error) {
	if s == nil {
		known, ok := KnownSchematic(id)
		if !ok {
			return []Warning{{Reason: ReasonSchematicUnchecked, Message: fmt.Sprintf(
				"schematic %s was not checked for the zfs and qemu-guest-agent extensions: pass its YAML with --schematic to check it", short(id))}}, nil
		}
		s = known
	}
	if s.HasExtension("zfs") {
		return nil, &UnfitSchematicError{SchematicID: id, Extension: ExtensionZFS, Reason: "its zfs service waits for /dev/zfs, " +
			"which a VM does not have, so " + bootTimeoutLoop + "; build the template from a schematic without zfs, " +
			"such as one with only " + ExtensionGuestAgent + " (ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515), " +
			"not from the bare-metal image of the platform release"}
	}
	var ws []Warning
	hasAgent := s.HasExtension("qemu-guest-agent")
	switch {
	case hasAgent && disableAgent:
		ws = append(ws, Warning{Reason: ReasonAgentDisabled, Message: fmt.Sprintf(
			"schematic %s carries %s but the template does not enable the guest agent: the agent service waits for its virtio port, "+
				"which PVE adds only to a VM with the agent enabled, so %s; enable the agent", short(id), ExtensionGuestAgent, bootTimeoutLoop)})
	case !hasAgent && !disableAgent:
		ws = append(ws, Warning{Reason: ReasonAgentExtensionMissing, Message: fmt.Sprintf(
			"schematic %s has no %s: the template enables the guest agent but nothing in the VM answers it, so PVE cannot shut the VM down "+
				"or read its addresses through the agent, and capmox times out waiting for it (error waiting for agent) unless the "+
				"ProxmoxMachineTemplate sets checks.skipQemuGuestAgent: true; add the extension to the schematic", short(id), ExtensionGuestAgent)})
	case !hasAgent:
		ws = append(ws, Warning{Reason: ReasonAgentExtensionMissing, Message: fmt.Sprintf(
			"schematic %s has no %s: capmox times out waiting for the agent (error waiting for agent) unless the "+
				"ProxmoxMachineTemplate sets checks.skipQemuGuestAgent: true", short(id), ExtensionGuestAgent)})
	}
	if s.HasExtension("lldpd") {
		ws = append(ws, Warning{Reason: ReasonExtensionMayBlockBoot, Message: fmt.Sprintf(
			"schematic %s carries %s, whose service does not come up without its configuration; until it does, %s", short(id), ExtensionLLDPD,
			strings.Replace(bootTimeoutLoop, "Talos never", "Talos does not", 1))})
	}
	return ws, nil
}

// knownSchematics are schematics whose content is known from their ID: the
// empty one, the one with only the QEMU guest agent, the default of the
// Cozystack chart and of Talos' Proxmox guide, and NVIDIASchematic. Their
// IDs are computed, not stored.
var knownSchematics = func() map[string]*Schematic {
	m := map[string]*Schematic{}
	for _, s := range []*Schematic{
		{},
		{Customization: Customization{SystemExtensions: SystemExtensions{OfficialExtensions: []string{ExtensionGuestAgent}}}},
		NVIDIASchematic(),
	} {
		id, err := s.ID()
		if err != nil {
			panic(err) // a fixed value that always encodes
		}
		m[id] = s
	}
	return m
}()

// KnownSchematic returns the content of a schematic known by its ID.
func KnownSchematic(id string) (*Schematic, bool) {
	s, ok := knownSchematics[id]
	return s, ok
}
