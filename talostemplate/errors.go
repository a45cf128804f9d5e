package talostemplate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Sentinel errors: one per category. The typed errors below wrap them and
// carry the detail.
var (
	// ErrInvalidSpec is wrapped by every *InvalidError: a template input does
	// not have the shape it must have before it is pasted into a root program.
	ErrInvalidSpec = errors.New("invalid template spec")
	// ErrInvalidSchematic is wrapped when a schematic document cannot be read.
	ErrInvalidSchematic = errors.New("invalid schematic")
	// ErrUnfitSchematic is wrapped by *UnfitSchematicError: the schematic is
	// valid but a VM built from it would not finish booting.
	ErrUnfitSchematic = errors.New("schematic does not fit a VM template")
	// ErrTagSetTaken is wrapped by *TagSetTakenError: a template with the
	// same tag set already exists in the cluster.
	ErrTagSetTaken = errors.New("tag set already taken")
	// ErrTemplateNotFound is capmox's own sentinel; its text is part of the
	// error capmox reports when a selector does not name exactly one template.
	ErrTemplateNotFound = errors.New("VM template not found")
	// ErrInvalidResources is wrapped when a cluster resource list cannot be read.
	ErrInvalidResources = errors.New("invalid cluster resources")
)

// InvalidError is a template input that fails its rule. Message is the body
// the reference template builder prints for that input; Hint, when set, says
// what to do.
type InvalidError struct {
	// Field names the input: vmid, storage, version, schematic, factoryURL,
	// factoryCA, diskSize, cpu or tags.
	Field   string
	Value   string
	Message string
	Hint    string
}

func (e *InvalidError) Error() string {
	if e.Hint == "" {
		return e.Message
	}
	return e.Message + " (" + e.Hint + ")"
}

func (e *InvalidError) Unwrap() error { return ErrInvalidSpec }

func invalid(field, value, msg, hint string) *InvalidError {
	return &InvalidError{Field: field, Value: value, Message: msg, Hint: hint}
}

// show renders a value for a message: as it is when it is plain printable
// text, quoted when it holds spaces, control characters or nothing at all,
// so a message never carries a raw newline or escape sequence; a value of
// more than termsafe.MaxQuoted bytes is cut, quoted (termsafe.Quote).
func show(v string) string {
	if v == "" || len(v) > termsafe.MaxQuoted {
		return termsafe.Quote(v)
	}
	for _, r := range v {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return strconv.Quote(v)
		}
	}
	return v
}

// UnfitSchematicError refuses a schematic for a VM template.
type UnfitSchematicError struct {
	// SchematicID is the ID of the refused schematic.
	SchematicID string
	// Extension is the official extension that makes it unfit.
	Extension string
	// Reason says what happens to a VM booted from it.
	Reason string
}

func (e *UnfitSchematicError) Error() string {
	return fmt.Sprintf("schematic %s carries the extension %s and cannot back a VM template: %s",
		short(e.SchematicID), e.Extension, e.Reason)
}

func (e *UnfitSchematicError) Unwrap() error { return ErrUnfitSchematic }

// TagSetTakenError is returned by CheckTagSetFree. Its text follows the
// reference builder: "a template already carries the tags a;b: <vmid> (<name>) on <node>".
type TagSetTakenError struct {
	// Tags is the normalised tag set joined with ';'.
	Tags string
	// Templates are the templates that already carry it.
	Templates []VMResource
}

func (e *TagSetTakenError) Error() string {
	held := make([]string, 0, len(e.Templates))
	for _, t := range e.Templates {
		held = append(held, fmt.Sprintf("%d (%s) on %s", t.VMID, termsafe.Cut(t.Name), termsafe.Cut(t.Node)))
	}
	return fmt.Sprintf("a template already carries the tags %s: %s", termsafe.Cut(e.Tags), termsafe.Cut(strings.Join(held, ", ")))
}

func (e *TagSetTakenError) Unwrap() error { return ErrTagSetTaken }

// NotFoundError is capmox's answer when a selector does not name exactly one
// template. Error() reproduces capmox's text byte for byte:
// `VM template not found: found N VM templates with tags "a;b"`, for a
// selector of at most termsafe.MaxQuoted bytes; a longer one is cut.
type NotFoundError struct {
	// Count is the number of templates capmox counted as matches.
	Count int
	// Tags is the selector as capmox prints it: the original tags joined with
	// ';' on v0.7, the normalised ones on v0.8 and later.
	Tags string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%v: found %d VM templates with tags %s", ErrTemplateNotFound, e.Count, termsafe.Quote(e.Tags))
}

func (e *NotFoundError) Unwrap() error { return ErrTemplateNotFound }

// short is the first eight characters of a schematic ID, as used in template
// names and tags.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
