package strictyaml

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
)

// ValueError is a value that its type's own UnmarshalJSON refused (a
// quantity given as a list, say), named by its path: the JSON decoder
// returns such an error as it is, without saying where the value was.
type ValueError struct {
	// Path is the value's place in the document: spec.resources.memory.
	Path string
	Err  error
}

// Error reads "resources.memory: <the type's error>".
func (e *ValueError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *ValueError) Unwrap() error { return e.Err }

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// refusedPath finds, in document order, the first value of data whose type
// under t has an UnmarshalJSON that refuses it with the message want, and
// returns its path.
func refusedPath(data []byte, t reflect.Type, want string) (string, bool) {
	return walkValue(bytes.TrimSpace(data), t, "", want)
}

func walkValue(raw []byte, t reflect.Type, path, want string) (string, bool) {
	t = deref(t)
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		return path, err != nil && err.Error() == want
	}
	switch t.Kind() {
	case reflect.Struct:
		return walkMembers(raw, func(key string, v []byte) (string, bool) {
			ft := fieldType(t, key)
			if ft == nil {
				return "", false
			}
			return walkValue(v, ft, joinKey(path, key), want)
		})
	case reflect.Map:
		return walkMembers(raw, func(key string, v []byte) (string, bool) {
			return walkValue(v, t.Elem(), joinKey(path, key), want)
		})
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return "", false
		}
		for i, it := range items {
			if p, ok := walkValue(it, t.Elem(), path+"["+strconv.Itoa(i)+"]", want); ok {
				return p, true
			}
		}
	}
	return "", false
}

// walkMembers calls visit on each member of the JSON object raw, in order,
// until one reports a find.
func walkMembers(raw []byte, visit func(key string, value []byte) (string, bool)) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return "", false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return "", false
		}
		if p, ok := visit(key, v); ok {
			return p, true
		}
	}
	return "", false
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
