package sim

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// SplitPath splits a field path into keys: dots separate keys, and a key in
// square brackets may contain dots and slashes, as in
// metadata.annotations[proxmox.cozystack.io/networks].
func SplitPath(path string) ([]string, error) {
	var keys []string
	for rest := path; rest != ""; {
		switch {
		case strings.HasPrefix(rest, "["):
			end := strings.Index(rest, "]")
			if end < 0 {
				return nil, fmt.Errorf("field path %q has an unclosed [", path)
			}
			keys = append(keys, rest[1:end])
			rest = strings.TrimPrefix(rest[end+1:], ".")
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				keys, rest = append(keys, rest), ""
				continue
			}
			if end == 0 {
				return nil, fmt.Errorf("field path %q has an empty key", path)
			}
			keys = append(keys, rest[:end])
			rest = strings.TrimPrefix(rest[end:], ".")
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("field path is empty")
	}
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("field path %q has an empty key", path)
		}
	}
	return keys, nil
}

// FieldString returns the value at path in obj as a YAML scalar would
// print it ("" when absent); a map or a list prints as flow-style JSON.
func FieldString(obj map[string]any, path string) (string, error) {
	keys, err := SplitPath(path)
	if err != nil {
		return "", err
	}
	var cur any = obj
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", nil
		}
		if cur, ok = m[k]; !ok {
			return "", nil
		}
	}
	switch v := cur.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case map[string]any, []any:
		b, err := yaml.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("cannot print %s: %w", path, err)
		}
		return strings.TrimSpace(string(b)), nil
	default:
		return fmt.Sprint(v), nil
	}
}
