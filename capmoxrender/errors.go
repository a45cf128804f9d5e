package capmoxrender

import (
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Sentinel categories. Every error Render returns wraps exactly one of them,
// so callers can branch with errors.Is and still print the detailed message.
var (
	// ErrRefused: the input asks for something the Proxmox substrate cannot
	// do; the message says what and what to do instead.
	ErrRefused = errors.New("refused")
	// ErrSchema: a rendered value would be rejected by the capmox CRD schema.
	ErrSchema = errors.New("rejected by the CRD schema")
	// ErrLookup: a live lookup failed (not a refusal: retry may succeed).
	ErrLookup = errors.New("lookup failed")
	// ErrInput: the input document cannot be read.
	ErrInput = errors.New("invalid input")
)

// RefusalError is a render-time refusal. Message is the exact text Cozystack
// uses where one exists; Field names the input that caused it.
type RefusalError struct {
	Field   string
	Message string
}

func (e *RefusalError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusalError) Is(target error) bool { return target == ErrRefused }

// refuse builds a RefusalError; as in errorf, a %q of the input is cut.
func refuse(field, format string, args ...any) error {
	return &RefusalError{Field: field, Message: fmt.Sprintf(format, termsafe.QuoteArgs(args...)...)}
}

// errorf is fmt.Errorf whose %q verbs quote a string with termsafe.Quote,
// cut to termsafe.MaxQuoted bytes: a value from the input is named in the
// message, never echoed whole however long it is.
func errorf(format string, args ...any) error {
	return fmt.Errorf(format, termsafe.QuoteArgs(args...)...)
}

// SchemaError names a rendered value the CRD schema of the chosen capmox
// version would reject, and the schema rule it breaks.
type SchemaError struct {
	Kind  string
	Path  string
	Value string
	Rule  string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("%s %s is %s: the CRD schema requires %s", e.Kind, e.Path, e.Value, e.Rule)
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }
