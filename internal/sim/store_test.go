package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// TestStoreAgreesWithAPIServer runs each shipped scenario twice, on the
// simulator's in-memory API and on a real kube-apiserver with the real
// CRDs, and compares the end state object by object. Left out is only what
// the in-memory API does not model, each a difference of
// controller-runtime's fake client that the controller's decisions do not
// read: what the server alone assigns (uid, creationTimestamp, generation,
// and so the observedGeneration the controller copies from it), the
// namespaces the server creates for itself and the fields it adds to a
// namespace, and the nulls and empty objects the server prunes from custom
// resources where the fake keeps what Go's JSON encoding wrote.
func TestStoreAgreesWithAPIServer(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"lifecycle.yaml", "prune-timeout.yaml", "restart-shrink.yaml", "hostile.yaml"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "scenarios", name)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := sim.ParseScenario(data)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := sim.RunOn(ctx, s, filepath.Dir(path), nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := testenv.StartAPIServer(t, testenv.APIServerOptions{
				Scheme:       sim.Scheme(),
				UpstreamCRDs: []string{"kube-ovn-v1.15.24", "capmox-v0.9.0"},
				CAPIIPAM:     true,
				CAPI:         true,
				CRDPaths:     []string{"../../config/crd/bases"},
			})
			api, err := client.NewWithWatch(cfg, client.Options{Scheme: sim.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			real, err := sim.RunOn(ctx, s, filepath.Dir(path), api)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(mem.Failures, real.Failures); diff != "" {
				t.Errorf("failed expectations differ (-in-memory +API server):\n%s", diff)
			}
			if diff := cmp.Diff(comparable(mem.Objects), comparable(real.Objects)); diff != "" {
				t.Errorf("end states differ (-in-memory +API server):\n%s", diff)
			}
			if len(mem.Objects) == 0 {
				t.Error("the scenario ends with no object")
			}
		})
	}
}

// serverNamespaces are the namespaces kube-apiserver creates for itself.
var serverNamespaces = map[string]bool{"default": true, "kube-node-lease": true, "kube-public": true, "kube-system": true}

// comparable drops what only one of the two APIs writes (see
// TestStoreAgreesWithAPIServer).
func comparable(objs []map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(objs))
	for _, o := range objs {
		u := (&unstructured.Unstructured{Object: o}).DeepCopy()
		if u.GetKind() == "Namespace" && serverNamespaces[u.GetName()] {
			continue
		}
		for _, f := range [][]string{{"metadata", "uid"}, {"metadata", "creationTimestamp"}, {"metadata", "generation"}} {
			unstructured.RemoveNestedField(u.Object, f...)
		}
		if u.GetKind() == "Namespace" {
			unstructured.RemoveNestedField(u.Object, "spec", "finalizers")
			unstructured.RemoveNestedField(u.Object, "status", "phase")
			unstructured.RemoveNestedField(u.Object, "metadata", "labels", "kubernetes.io/metadata.name")
		}
		out = append(out, prune(u.Object).(map[string]any))
	}
	return out
}

// prune drops nulls, empty objects and observedGeneration, recursively.
func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k == "observedGeneration" {
				continue
			}
			e = prune(e)
			if m, ok := e.(map[string]any); e == nil || (ok && len(m) == 0) {
				continue
			}
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = prune(e)
		}
		return out
	}
	return v
}
