package talostemplate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func schematicWith(exts ...string) *Schematic {
	return &Schematic{Customization: Customization{SystemExtensions: SystemExtensions{OfficialExtensions: exts}}}
}

func TestCheckSchematic(t *testing.T) {
	cases := map[string]struct {
		reason       string
		id           string
		s            *Schematic
		disableAgent bool
		want         []WarningReason
		mention      string
	}{
		"AgentOn":          {reason: "the default schematic with the agent enabled is clean", id: "x", s: schematicWith(ExtensionGuestAgent)},
		"KnownDefault":     {reason: "the chart's default schematic is known by ID", id: idGuestAgent},
		"KnownEmpty":       {reason: "the empty schematic is known by ID and has no agent", id: idEmpty, want: []WarningReason{ReasonAgentExtensionMissing}, mention: "add the extension"},
		"Unknown":          {reason: "an unknown ID cannot be checked", id: strings.Repeat("a", 64), want: []WarningReason{ReasonSchematicUnchecked}, mention: "--schematic"},
		"AgentOff":         {reason: "agent extension but no channel: the 70-minute reboot loop", id: "x", s: schematicWith(ExtensionGuestAgent), disableAgent: true, want: []WarningReason{ReasonAgentDisabled}, mention: "70 minutes"},
		"NoAgentOn":        {reason: "agent enabled, nothing answers", id: "x", s: schematicWith("siderolabs/iscsi-tools"), want: []WarningReason{ReasonAgentExtensionMissing}, mention: "skipQemuGuestAgent"},
		"NoAgentOff":       {reason: "no agent anywhere: capmox must skip its agent check", id: "x", s: schematicWith(), disableAgent: true, want: []WarningReason{ReasonAgentExtensionMissing}, mention: "skipQemuGuestAgent"},
		"LLDPD":            {reason: "lldpd without config blocks the boot sequence", id: "x", s: schematicWith(ExtensionGuestAgent, ExtensionLLDPD), want: []WarningReason{ReasonExtensionMayBlockBoot}, mention: "lldpd"},
		"AgentByShortName": {reason: "an extension is recognised by its last path element", id: "x", s: schematicWith("ghcr.io/siderolabs/qemu-guest-agent")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ws, err := CheckSchematic(tc.id, tc.s, tc.disableAgent)
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			var got []WarningReason
			for _, w := range ws {
				got = append(got, w.Reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
			if tc.mention != "" && (len(ws) == 0 || !strings.Contains(ws[0].Message, tc.mention)) {
				t.Errorf("%s: want a message mentioning %q, got %v", tc.reason, tc.mention, ws)
			}
		})
	}
}

func TestCheckSchematicRefusesZFS(t *testing.T) {
	s, err := ParseSchematic([]byte("customization:\n  systemExtensions:\n    officialExtensions:\n      - siderolabs/qemu-guest-agent\n      - siderolabs/zfs\n"))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.ID()
	_, err = CheckSchematic(id, s, false)
	var unfit *UnfitSchematicError
	if !errors.As(err, &unfit) || !errors.Is(err, ErrUnfitSchematic) {
		t.Fatalf("a zfs schematic must be refused with *UnfitSchematicError, got %v", err)
	}
	for _, why := range []string{id[:8], "siderolabs/zfs", "/dev/zfs", "reboots the VM at the boot timeout"} {
		if !strings.Contains(err.Error(), why) {
			t.Errorf("the refusal must say %q: %v", why, err)
		}
	}
}

func TestKnownSchematicIDs(t *testing.T) {
	for _, id := range []string{idEmpty, idGuestAgent} {
		s, ok := KnownSchematic(id)
		if !ok {
			t.Fatalf("schematic %s must be known", id)
		}
		if got, _ := s.ID(); got != id {
			t.Errorf("known schematic %s hashes to %s", id, got)
		}
	}
}
