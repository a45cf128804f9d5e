package talostemplate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Vectors from the Image Factory's own tests and the Talos Proxmox guide.
const (
	idEmpty      = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
	idGuestAgent = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
)

func TestSchematicID(t *testing.T) {
	cases := map[string]struct {
		reason string
		doc    string
		want   string
	}{
		"EmptyObject":          {reason: "{} is the empty schematic", doc: `{}`, want: idEmpty},
		"EmptyCustomization":   {reason: "an empty customization is written {} anyway", doc: `customization: {}`, want: idEmpty},
		"EmptyKernelArgs":      {reason: "an empty list is left out", doc: `customization: {"extraKernelArgs": []}`, want: idEmpty},
		"KernelArgs":           {reason: "factory vector config1", doc: `{"customization": {"extraKernelArgs": ["noapic", "nolapic"]}}`, want: "9cba8e32753f91a16c1837ab8abf356af021706ef284aef07380780177d9a06c"},
		"KernelArgsEmptyExts":  {reason: "an empty systemExtensions is left out", doc: `{"customization": {"extraKernelArgs": ["noapic", "nolapic"], "systemExtensions": {}}}`, want: "9cba8e32753f91a16c1837ab8abf356af021706ef284aef07380780177d9a06c"},
		"GuestAgent":           {reason: "the ID of Talos' Proxmox guide", doc: "customization:\n  systemExtensions:\n    officialExtensions:\n      - siderolabs/qemu-guest-agent\n", want: idGuestAgent},
		"GuestAgentJSON":       {reason: "JSON bodies hash the same", doc: `{"customization":{"systemExtensions":{"officialExtensions":["siderolabs/qemu-guest-agent"]}}}`, want: idGuestAgent},
		"Meta":                 {reason: "meta keys are integers; field order of the input does not matter", doc: `{"customization": {"meta": [{"key": 10, "value": "foo"}], "extraKernelArgs": [], "systemExtensions": {}}}`, want: "d308a2a5ee2277bed5fbaa104fcbc8d59122abfa737df987a95b4ca763459a7f"},
		"Overlay":              {reason: "overlay fields are written image before name", doc: `{"overlay": {"name": "rpi_generic", "image": "siderolabs/sbc-raspberrypi"}}`, want: "ee21ef4a5ef808a9b7484cc0dda0f25075021691c8c09a276591eedb638ea1f9"},
		"OverlayEmptyCustom":   {reason: "same with an explicit empty customization", doc: `{"overlay": {"name": "rpi_generic", "image": "siderolabs/sbc-raspberrypi"},"customization":{}}`, want: "ee21ef4a5ef808a9b7484cc0dda0f25075021691c8c09a276591eedb638ea1f9"},
		"SecureBoot":           {reason: "factory vector secureboot", doc: `{"customization":{"secureboot": {"includeWellKnownCertificates": true}}}`, want: "fa8e05f142a851d3ee568eb0a8e5841eaf6b0ebc8df9a63df16ac5ed2c04f3e6"},
		"SectorSize":           {reason: "factory vector 4k sector disk image", doc: "customization:\n  diskImage:\n    sectorSize: 4096\n", want: "92833e9ddd9bb9e11b2464fa5525429f01866306d52ebd882ee08d7918f6d1ea"},
		"VGA":                  {reason: "the canonical hash of the factory docs' vga=791 example", doc: "customization:\n  extraKernelArgs:\n    - vga=791\n", want: "eea1f9534c46d95c4715a2f13d17eacb927c13a42ef087c79b22c3bd0c49d073"},
		"BootloaderNone":       {reason: "bootloader none is the zero value and left out", doc: "customization:\n  bootloader: none\n", want: idEmpty},
		"BootloaderNoneUpper":  {reason: "bootloader names ignore case", doc: "customization:\n  bootloader: NONE\n", want: idEmpty},
		"ZeroSectorSize":       {reason: "sector size 0 is the default and left out", doc: "customization:\n  diskImage:\n    sectorSize: 0\n", want: idEmpty},
		"FalseWellKnownCerts":  {reason: "false is left out", doc: "customization:\n  secureboot:\n    includeWellKnownCertificates: false\n", want: idEmpty},
		"EmptyDocumentsAround": {reason: "empty documents hold nothing", doc: "---\n---\ncustomization:\n  systemExtensions:\n    officialExtensions:\n      - siderolabs/qemu-guest-agent\n---\n", want: idGuestAgent},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := SchematicID([]byte(tc.doc))
			if err != nil {
				t.Fatalf("%s: SchematicID: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSchematicCanonical(t *testing.T) {
	cases := map[string]struct {
		reason string
		doc    string
		want   string
	}{
		"GuestAgent": {
			reason: "four-space indentation with sequence items indented under their key",
			doc:    `{"customization":{"systemExtensions":{"officialExtensions":["siderolabs/qemu-guest-agent"]}}}`,
			want:   "customization:\n    systemExtensions:\n        officialExtensions:\n            - siderolabs/qemu-guest-agent\n",
		},
		"Empty": {reason: "customization is always written", doc: `{}`, want: "customization: {}\n"},
		"FieldOrder": {
			reason: "struct order: owner, overlay, then customization's embeddedMachineConfiguration, extraKernelArgs, meta, systemExtensions, bootloader, secureboot, diskImage",
			doc: `customization:
  diskImage: {sectorSize: 4096}
  secureboot: {includeWellKnownCertificates: true, enrollKeys: force}
  bootloader: SD-Boot
  systemExtensions: {officialExtensions: [b, a]}
  meta: [{value: x, key: 12}]
  extraKernelArgs: [console=ttyS0]
  embeddedMachineConfiguration: "machine: {}"
overlay: {options: {z: 1, a: [true]}, name: n, image: i}
owner: alice
`,
			want: `owner: alice
overlay:
    image: i
    name: "n"
    options:
        a:
            - true
        z: 1
customization:
    embeddedMachineConfiguration: 'machine: {}'
    extraKernelArgs:
        - console=ttyS0
    meta:
        - key: 12
          value: x
    systemExtensions:
        officialExtensions:
            - b
            - a
    bootloader: sd-boot
    secureboot:
        enrollKeys: force
        includeWellKnownCertificates: true
    diskImage:
        sectorSize: 4096
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := ParseSchematic([]byte(tc.doc))
			if err != nil {
				t.Fatalf("%s: ParseSchematic: %v", tc.reason, err)
			}
			got, err := s.Canonical()
			if err != nil {
				t.Fatalf("%s: Canonical: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSchematicIDKeepsListOrder(t *testing.T) {
	a, errA := SchematicID([]byte(`customization: {systemExtensions: {officialExtensions: [siderolabs/iscsi-tools, siderolabs/qemu-guest-agent]}}`))
	b, errB := SchematicID([]byte(`customization: {systemExtensions: {officialExtensions: [siderolabs/qemu-guest-agent, siderolabs/iscsi-tools]}}`))
	if errA != nil || errB != nil {
		t.Fatalf("SchematicID: %v, %v", errA, errB)
	}
	if a == b {
		t.Errorf("the factory does not sort extensions, so two orders must give two IDs; both gave %s", a)
	}
}

func TestParseSchematicRefuses(t *testing.T) {
	cases := map[string]struct {
		reason string
		doc    string
		want   string
	}{
		"UnknownField":      {reason: "decoding is strict", doc: "customization:\n  systemExtension:\n    officialExtensions: [a]\n", want: `unknown field "systemExtension" in customization`},
		"UnknownTopLevel":   {reason: "decoding is strict at the top too", doc: "talos: {}\n", want: `unknown field "talos" in the schematic`},
		"DuplicateKey":      {reason: "a key given twice is ambiguous", doc: "customization: {}\ncustomization: {}\n", want: "already defined"},
		"MetaKeyTooLarge":   {reason: "meta keys are 0-255", doc: "customization: {meta: [{key: 256, value: x}]}\n", want: "cannot unmarshal"},
		"BadBootloader":     {reason: "bootloader is an enum", doc: "customization: {bootloader: lilo}\n", want: `bootloader "lilo" is not one of none, dual-boot, sd-boot, grub`},
		"Empty":             {reason: "an empty file is not a schematic", doc: "", want: "the document is empty"},
		"NotAMap":           {reason: "a list is not a schematic", doc: "- a\n", want: "cannot unmarshal"},
		"NegativeSector":    {reason: "sector size is unsigned", doc: "customization: {diskImage: {sectorSize: -1}}\n", want: "cannot unmarshal"},
		"ExtensionsNotList": {reason: "officialExtensions is a list", doc: "customization: {systemExtensions: {officialExtensions: a}}\n", want: "cannot unmarshal"},
		"SecondDocument":    {reason: "the factory would hash the first document alone", doc: "customization: {}\n---\nbogus: 1\n", want: "holds 2 YAML documents (the second begins on line 2)"},
		"SyntaxInSecond":    {reason: "no document is skipped unread", doc: "customization: {}\n---\ncustomization: [\n", want: "document 2: yaml: line 3"},
		"OnlyEmptyDocs":     {reason: "empty documents are no schematic", doc: "---\n---\n", want: "the document is empty"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSchematic([]byte(tc.doc))
			if !errors.Is(err, ErrInvalidSchematic) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want ErrInvalidSchematic containing %q", tc.reason, err, tc.want)
			}
		})
	}
}

func TestBootloaderMarshalRefusesUnknown(t *testing.T) {
	s := &Schematic{Customization: Customization{Bootloader: Bootloader(9)}}
	if _, err := s.ID(); err == nil || !strings.Contains(err.Error(), "cannot write bootloader 9") {
		t.Errorf("an out-of-range bootloader must not hash silently, got %v", err)
	}
}

// FuzzSchematicID: any accepted document has a canonical text that parses
// back to the same ID, and canonicalising is idempotent.
func FuzzSchematicID(f *testing.F) {
	for _, s := range []string{`{}`, `customization: {}`, "customization:\n  systemExtensions:\n    officialExtensions:\n      - siderolabs/qemu-guest-agent\n",
		`{"overlay": {"name": "rpi_generic", "image": "x", "options": {"a": {"b": [1, "2"]}}}}`, "owner: bob\ncustomization: {bootloader: grub, meta: [{key: 1, value: ''}]}\n",
		"customization: {extraKernelArgs: ['a: b', \"\\x00\", '#x', '- y']}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := ParseSchematic(doc)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchematic) {
				t.Fatalf("a refusal must wrap ErrInvalidSchematic: %v", err)
			}
			if strings.Contains(err.Error(), "talostemplate.") {
				t.Fatalf("a refusal names a Go type: %v", err)
			}
			return
		}
		canon, err := s.Canonical()
		if err != nil {
			return // e.g. overlay options holding values YAML cannot write back
		}
		id, _ := s.ID()
		s2, err := ParseSchematic(canon)
		if err != nil {
			t.Fatalf("canonical text does not parse back: %v\n%s", err, canon)
		}
		canon2, err := s2.Canonical()
		if err != nil {
			t.Fatalf("re-encoding failed: %v", err)
		}
		if diff := cmp.Diff(string(canon), string(canon2)); diff != "" {
			t.Fatalf("canonical form is not idempotent: -first +second:\n%s", diff)
		}
		if id2, _ := s2.ID(); id2 != id || len(id) != 64 {
			t.Fatalf("ID changed across a round trip: %s then %s", id, id2)
		}
	})
}

// TestSchematicTypoNamesTheSection: a misspelt or mistyped field is
// explained by where it is in the schematic, never by a Go type; the
// control with the right spelling parses.
func TestSchematicTypoNamesTheSection(t *testing.T) {
	cases := map[string]string{
		"customization:\n  systemExtension:\n    officialExtensions: [siderolabs/qemu-guest-agent]\n": `line 2: unknown field "systemExtension" in customization`,
		"customization:\n  systemExtensions:\n    officialExtension: [x]\n":                           `line 3: unknown field "officialExtension" in customization.systemExtensions`,
		"customization:\n  systemExtensions:\n    officialExtensions: 5\n":                            "cannot unmarshal !!int `5` into a list",
		"owners: bob\n": `line 1: unknown field "owners" in the schematic`,
	}
	for doc, want := range cases {
		_, err := ParseSchematic([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "talostemplate.") {
			t.Errorf("%q: %v; want %q", doc, err, want)
		}
	}
	if _, err := ParseSchematic([]byte("customization:\n  systemExtensions:\n    officialExtensions: [siderolabs/qemu-guest-agent]\n")); err != nil {
		t.Errorf("the control: %v", err)
	}
}
