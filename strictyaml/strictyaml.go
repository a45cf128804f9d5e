// Package strictyaml decodes YAML (or JSON) input files into Go values
// without dropping a field. Field names match exactly, as the Kubernetes
// API server matches them: encoding/json, which sigs.k8s.io/yaml's
// UnmarshalStrict goes through, would take "Name" or "NAME" for name, and
// of a document holding both keep one and drop the other without a word.
// Here a key the type does not declare is refused by its path, with the
// declared field it probably means, and so is a key given twice. Nor is a
// document dropped: Unmarshal refuses input that holds a second document
// where the parser would read the first alone, and Documents reads every
// document of a stream.
package strictyaml

import (
	"errors"
	"reflect"
	"strconv"
	"strings"

	kjson "sigs.k8s.io/json"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// FieldError is a key the decoding refused: unknown to the type, or given
// twice in one mapping.
type FieldError struct {
	// Path is the key's place in the document: tenants[0].Name.
	Path string
	// Duplicate is true for a key given twice, false for an unknown one.
	Duplicate bool
	// Suggestion is the declared field an unknown key probably means
	// (same letters in another case, or one or two letters off); empty
	// when there is none.
	Suggestion string
}

// Error reads `unknown field "tenants[0].Name"; did you mean "name"?`; a
// path longer than termsafe.MaxQuoted bytes is cut (termsafe.Quote).
func (e *FieldError) Error() string {
	if e.Duplicate {
		return "duplicate field " + termsafe.Quote(e.Path) + "; give it once"
	}
	msg := "unknown field " + termsafe.Quote(e.Path)
	if e.Suggestion != "" {
		msg += "; did you mean " + strconv.Quote(e.Suggestion) + "?"
	}
	return msg
}

// Unmarshal decodes a YAML or JSON document into v, which must be a
// non-nil pointer. A key given twice in a mapping, or a key v's type does
// not declare (in any other case than declared, too), is an error; the
// refused keys come back as *FieldError, one per key, joined with
// termsafe.Join (see FieldErrors): the first termsafe.MaxErrors keys and a
// count of the rest (the decoder stops collecting at 100). A value that
// its type's own UnmarshalJSON refuses comes back as *ValueError, named by
// its path. Other errors are the YAML parser's or the JSON decoder's,
// naming the line or the field.
//
// data holds one document of data: empty documents around it are passed
// over, and input with more than one document of data is refused as
// *DocumentsError, so that none is dropped unread (see JSON).
func Unmarshal(data []byte, v any) error {
	j, err := JSON(data)
	if err != nil {
		return err
	}
	return UnmarshalJSON(j, v)
}

// UnmarshalJSON is Unmarshal for input that is JSON already, such as a
// json.RawMessage cut out of a larger object.
func UnmarshalJSON(data []byte, v any) error {
	refused, err := unmarshalJSON(data, v)
	if err != nil {
		return err
	}
	return termsafe.Join(refused...)
}

// unmarshalJSON decodes data into v and returns every refused key (as
// *FieldError where the decoder names its path), or the decoder's error:
// a *ValueError when a type's own UnmarshalJSON refused a value.
func unmarshalJSON(data []byte, v any) ([]error, error) {
	strict, err := kjson.UnmarshalStrict(data, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		if path, ok := refusedPath(data, reflect.TypeOf(v), err.Error()); ok {
			return nil, &ValueError{Path: path, Err: err}
		}
		return nil, err
	}
	refused := make([]error, 0, len(strict))
	for _, e := range strict {
		refused = append(refused, fieldError(e, v))
	}
	return refused, nil
}

// UnmarshalOpen is Unmarshal for a document that v's type reads only part
// of, leaving the rest to other readers: a key the type does not declare
// passes, unless it is a declared field's name in another case (which
// encoding/json would take for the field, or drop beside it). A key given
// twice is refused, as by Unmarshal, and so is input holding more than one
// document of data.
func UnmarshalOpen(data []byte, v any) error {
	j, err := JSON(data)
	if err != nil {
		return err
	}
	return UnmarshalOpenJSON(j, v)
}

// UnmarshalOpenJSON is UnmarshalOpen for input that is JSON already.
func UnmarshalOpenJSON(data []byte, v any) error {
	refused, err := unmarshalJSON(data, v)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range refused {
		f, ok := e.(*FieldError)
		if !ok || f.Duplicate || (f.Suggestion != "" && strings.EqualFold(f.Suggestion, lastKey(f.Path))) {
			errs = append(errs, e)
		}
	}
	return termsafe.Join(errs...)
}

// lastKey is the last key of a field path: "Name" of "tenants[0].Name".
func lastKey(path string) string {
	segs := splitPath(path)
	if len(segs) == 0 {
		return path
	}
	return segs[len(segs)-1]
}

// fieldError turns one of the decoder's strict errors ("unknown field
// \"a.b\"", with the path in FieldPath) into a *FieldError.
func fieldError(e error, v any) error {
	p, ok := e.(interface{ FieldPath() string })
	if !ok {
		return e
	}
	fe := &FieldError{Path: p.FieldPath(), Duplicate: strings.HasPrefix(e.Error(), "duplicate field")}
	if !fe.Duplicate {
		fe.Suggestion = suggest(v, fe.Path)
	}
	return fe
}

// FieldErrors returns the *FieldError values in err, in order; nil when
// err holds none.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		var fe *FieldError
		switch x := err.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		default:
			if errors.As(err, &fe) {
				out = append(out, fe)
			}
		}
	}
	walk(err)
	return out
}
