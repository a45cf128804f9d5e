package talostemplate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Schematic is an Image Factory schematic. The field order, names and
// omitempty rules are those of the factory's own model: the canonical YAML,
// and so the ID, depends on them. Do not reorder fields.
type Schematic struct {
	// Owner is an Enterprise-only field; it is part of the canonical text.
	Owner         string        `yaml:"owner,omitempty"`
	Overlay       Overlay       `yaml:"overlay,omitempty"`
	Customization Customization `yaml:"customization"`
}

// Overlay selects a board overlay.
type Overlay struct {
	Image   string         `yaml:"image"`
	Name    string         `yaml:"name"`
	Options map[string]any `yaml:"options,omitempty"`
}

// Customization is the Talos image customisation.
type Customization struct {
	EmbeddedMachineConfiguration string           `yaml:"embeddedMachineConfiguration,omitempty"`
	ExtraKernelArgs              []string         `yaml:"extraKernelArgs,omitempty"`
	Meta                         []MetaValue      `yaml:"meta,omitempty"`
	SystemExtensions             SystemExtensions `yaml:"systemExtensions,omitempty"`
	Bootloader                   Bootloader       `yaml:"bootloader,omitempty"`
	SecureBoot                   SecureBoot       `yaml:"secureboot,omitempty"`
	DiskImage                    DiskImage        `yaml:"diskImage,omitempty"`
}

// MetaValue is one initial META entry; keys are 0-255.
type MetaValue struct {
	Key   uint8  `yaml:"key"`
	Value string `yaml:"value"`
}

// SystemExtensions lists official extensions by name, such as
// siderolabs/qemu-guest-agent. The factory keeps the given order.
type SystemExtensions struct {
	OfficialExtensions []string `yaml:"officialExtensions,omitempty"`
}

// SecureBoot holds the secure boot options.
type SecureBoot struct {
	EnrollKeys                   string `yaml:"enrollKeys,omitempty"`
	IncludeWellKnownCertificates bool   `yaml:"includeWellKnownCertificates,omitempty"`
}

// DiskImage holds the disk image options.
type DiskImage struct {
	SectorSize uint `yaml:"sectorSize,omitempty"`
}

// Bootloader is the disk image's bootloader. Like the factory's enum it is an
// integer written by name; its zero value, none, is left out of the
// canonical text.
type Bootloader int

var bootloaderNames = []string{"none", "dual-boot", "sd-boot", "grub"}

// MarshalText writes the bootloader's name.
func (b Bootloader) MarshalText() ([]byte, error) {
	if b < 0 || int(b) >= len(bootloaderNames) {
		return nil, fmt.Errorf("cannot write bootloader %d: not one of %s", int(b), strings.Join(bootloaderNames, ", "))
	}
	return []byte(bootloaderNames[b]), nil
}

// UnmarshalText reads a bootloader name, ignoring case as the factory does.
func (b *Bootloader) UnmarshalText(text []byte) error {
	for i, n := range bootloaderNames {
		if strings.EqualFold(string(text), n) {
			*b = Bootloader(i)
			return nil
		}
	}
	return fmt.Errorf("bootloader %s is not one of %s", termsafe.Quote(string(text)), strings.Join(bootloaderNames, ", "))
}

// ParseSchematic decodes a schematic from YAML or JSON the way the Image
// Factory does: strictly, so an unknown or misspelt field is an error rather
// than silently ignored (it would change nothing in the image but the ID a
// reader expects). The schematic is one YAML document: the factory reads
// the first alone, so a file with a second document of data is refused
// (strictyaml.DocumentsError) rather than hashed in part, and so is a
// syntax error in any document; empty documents are passed over.
func ParseSchematic(data []byte) (*Schematic, error) {
	nodes := yaml.NewDecoder(bytes.NewReader(data))
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var found *Schematic
	var lines []int // where each document of data begins
	for i := 1; ; i++ {
		var n yaml.Node
		err := nodes.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidSchematic, &strictyaml.DocumentError{Index: i, Err: err})
		}
		var s Schematic
		err = dec.Decode(&s)
		if len(n.Content) == 0 || n.Content[0].Tag == "!!null" {
			continue
		}
		if err != nil && found == nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidSchematic, fieldError(err))
		}
		if found == nil {
			found = &s
		}
		lines = append(lines, n.Line)
	}
	switch {
	case found == nil:
		return nil, fmt.Errorf("%w: the document is empty; an empty schematic is written {}", ErrInvalidSchematic)
	case len(lines) > 1:
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchematic, &strictyaml.DocumentsError{Count: len(lines), Line: lines[1]})
	}
	return found, nil
}

// schematicSections names the schematic's sections by their place in the
// YAML, for the decoder's messages, which name the Go types instead.
var schematicSections = map[string]string{
	"talostemplate.Schematic":        "the schematic",
	"talostemplate.Overlay":          "overlay",
	"talostemplate.Customization":    "customization",
	"talostemplate.MetaValue":        "customization.meta[]",
	"talostemplate.SystemExtensions": "customization.systemExtensions",
	"talostemplate.SecureBoot":       "customization.secureboot",
	"talostemplate.DiskImage":        "customization.diskImage",
	"talostemplate.Bootloader":       "customization.bootloader",
}

// fieldError rewrites the decoder's "field x not found in type T" and
// "cannot unmarshal ... into T" as the YAML section the field is in, so
// that a typo is explained in the schematic's own words.
func fieldError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	lines := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		if i := strings.Index(e, "field "); i >= 0 && strings.Contains(e, " not found in type ") {
			field, typ, _ := strings.Cut(e[i+len("field "):], " not found in type ")
			e = e[:i] + fmt.Sprintf("unknown field %s in %s", termsafe.Quote(field), section(typ))
		} else if i := strings.LastIndex(e, " into "); i >= 0 {
			e = e[:i] + " into " + section(e[i+len(" into "):])
		}
		lines = append(lines, e)
	}
	return errors.New(strings.Join(lines, "; "))
}

// section is the YAML name of Go type typ, or a neutral word for others.
func section(typ string) string {
	if s, ok := schematicSections[typ]; ok {
		return s
	}
	switch {
	case strings.HasPrefix(typ, "[]"):
		return "a list"
	case strings.HasPrefix(typ, "map["):
		return "a mapping"
	case strings.Contains(typ, "."):
		return "this field"
	}
	return typ
}

// Canonical is the schematic's canonical text: YAML in struct field order,
// four-space indentation with sequence items indented under their key, empty
// fields left out except customization, which is written {} when empty.
func (s *Schematic) Canonical() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("cannot encode the schematic: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("cannot encode the schematic: %w", err)
	}
	return buf.Bytes(), nil
}

// ID is the schematic's Image Factory ID: the lowercase hex SHA-256 of its
// canonical text. Lists keep their order: the same extensions in another
// order give another ID.
func (s *Schematic) ID() (string, error) {
	text, err := s.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(text)
	return hex.EncodeToString(sum[:]), nil
}

// SchematicID parses data and returns its ID.
func SchematicID(data []byte) (string, error) {
	s, err := ParseSchematic(data)
	if err != nil {
		return "", err
	}
	return s.ID()
}

// HasExtension reports whether the schematic installs the official extension
// name, given as its last path element ("zfs") or in full ("siderolabs/zfs").
func (s *Schematic) HasExtension(name string) bool {
	for _, e := range s.Customization.SystemExtensions.OfficialExtensions {
		e = strings.TrimSpace(e)
		if e == name || e[strings.LastIndex(e, "/")+1:] == name {
			return true
		}
	}
	return false
}
