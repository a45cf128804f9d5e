package capmoxrender

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// object builds an unstructured object from apiVersion, kind, metadata and
// a typed spec. The spec goes through encoding/json, so omitempty and
// omitzero are honoured exactly as the upstream types declare them.
func object(apiVersion, kind, namespace, name string, labels map[string]string, spec any) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	if len(labels) > 0 {
		u.SetLabels(labels)
	}
	if spec != nil {
		m, err := toMap(spec)
		if err != nil {
			return nil, fmt.Errorf("cannot render %s %s: %w", kind, name, err)
		}
		u.Object["spec"] = m
	}
	return u, nil
}

// typed converts a typed Kubernetes object (TypeMeta set) to unstructured,
// dropping status and every null field (such as creationTimestamp).
func typed(obj any) (*unstructured.Unstructured, error) {
	m, err := toMap(obj)
	if err != nil {
		return nil, fmt.Errorf("cannot render object: %w", err)
	}
	delete(m, "status")
	return &unstructured.Unstructured{Object: m}, nil
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// utiljson keeps whole numbers as int64, as the API server decodes them.
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	dropNulls(m)
	return m, nil
}

func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range t {
			dropNulls(e)
		}
	}
}

// contentHash is the first n hex characters of sha256 over v's JSON.
func contentHash(v any, n int) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("cannot hash rendered content: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:n], nil
}

func ptr[T any](v T) *T { return &v }
