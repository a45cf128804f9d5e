package vpcrender

import (
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// ErrRefused is the category of every refusal: the spec is well-formed but
// the platform must not render it.
var ErrRefused = errors.New("VPC spec refused")

// RefusalError is one refusal. Its message is the exact text the platform
// shows, which names the field and what to change.
type RefusalError struct {
	// Field is the spec path the refusal is about, such as
	// "subnets[workers].proxmox.vmRange" or "routes[0]".
	Field   string
	Message string
}

func (e *RefusalError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrRefused) true for every refusal.
func (e *RefusalError) Is(target error) bool { return target == ErrRefused }

// Refusals returns every *RefusalError in err, in order.
func Refusals(err error) []*RefusalError {
	var out []*RefusalError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if r, ok := e.(*RefusalError); ok {
			out = append(out, r)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		walk(errors.Unwrap(e))
	}
	walk(err)
	return out
}

// refusals collects refusals in the order they are found.
type refusals []error

func (r *refusals) add(field, msg string) {
	*r = append(*r, &RefusalError{Field: field, Message: msg})
}

// addf adds a refusal of fmt.Sprintf(format, args...), in which %q quotes
// a value of the spec with termsafe.Quote: a value of any length is named
// in a line.
func (r *refusals) addf(field, format string, args ...any) {
	r.add(field, fmt.Sprintf(format, termsafe.QuoteArgs(args...)...))
}

func (r refusals) err() error { return termsafe.Join(r...) }
