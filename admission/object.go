package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrMalformedObject marks an object the rules cannot read: not JSON, or a
// field of the wrong type.
var ErrMalformedObject = errors.New("malformed object")

// object is a decoded JSON object. Keys are matched exactly, as CEL does;
// numbers stay json.Number so integers are told from fractions.
type object map[string]any

func decodeObject(raw []byte) (object, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedObject, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the object", ErrMalformedObject)
	}
	return m, nil
}

// get walks path through nested objects; ok is false when a step is
// missing or null.
func (o object) get(path ...string) (any, bool) {
	var cur any = map[string]any(o)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[p]
		if !ok || cur == nil {
			return nil, false
		}
	}
	return cur, true
}

func (o object) has(path ...string) bool {
	_, ok := o.get(path...)
	return ok
}

// obj returns the object at path, or an empty one when it is missing.
func (o object) obj(path ...string) (object, error) {
	v, ok := o.get(path...)
	if !ok {
		return object{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fieldError(path, "an object", v)
	}
	return m, nil
}

// list returns the list of objects at path, or nil when it is missing.
func (o object) list(path ...string) ([]object, error) {
	v, ok := o.get(path...)
	if !ok {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fieldError(path, "a list", v)
	}
	out := make([]object, 0, len(items))
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fieldError(path, "a list of objects", v)
		}
		out = append(out, m)
	}
	return out, nil
}

// str returns the string at path; ok is false when it is missing.
func (o object) str(path ...string) (string, bool, error) {
	v, ok := o.get(path...)
	if !ok {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, fieldError(path, "a string", v)
	}
	return s, true, nil
}

func (o object) integer(path ...string) (int64, bool, error) {
	v, ok := o.get(path...)
	if !ok {
		return 0, false, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, false, fieldError(path, "an integer", v)
	}
	i, err := n.Int64()
	if err != nil {
		return 0, false, fieldError(path, "an integer", v)
	}
	return i, true, nil
}

func (o object) boolean(path ...string) (bool, error) {
	v, ok := o.get(path...)
	if !ok {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fieldError(path, "a boolean", v)
	}
	return b, nil
}

// stringMap returns the map of strings at path (annotations), or an empty
// map when it is missing.
func (o object) stringMap(path ...string) (map[string]string, error) {
	v, ok := o.get(path...)
	if !ok {
		return map[string]string{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fieldError(path, "a map of strings", v)
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fieldError(append(path, k), "a string", x)
		}
		out[k] = s
	}
	return out, nil
}

func fieldError(path []string, want string, got any) error {
	return fmt.Errorf("%w: %s is %T, not %s", ErrMalformedObject, dotted(path), got, want)
}

func dotted(path []string) string {
	var b bytes.Buffer
	for i, p := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}
