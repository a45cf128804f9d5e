package capmoxrender_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// scenario is one directory under testdata/scenarios: input.yaml holds a
// Kubernetes or KubernetesNodes object, lookup.yaml (optional) the live
// objects the lookups see.
type scenario struct {
	name   string
	input  []byte
	lookup *capmoxrender.Objects
}

func loadScenarios(t testing.TB) []scenario {
	t.Helper()
	dirs, err := os.ReadDir("testdata/scenarios")
	if err != nil {
		t.Fatalf("cannot list scenarios: %v", err)
	}
	var out []scenario
	for _, d := range dirs {
		dir := filepath.Join("testdata/scenarios", d.Name())
		in, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
		if err != nil {
			t.Fatalf("cannot read %s: %v", dir, err)
		}
		s := scenario{name: d.Name(), input: in}
		if l, err := os.ReadFile(filepath.Join(dir, "lookup.yaml")); err == nil {
			if s.lookup, err = capmoxrender.ReadObjectsBytes(l); err != nil {
				t.Fatalf("cannot read lookup of %s: %v", dir, err)
			}
		}
		out = append(out, s)
	}
	return out
}

// renderScenario renders s for one capmox generation.
func renderScenario(t testing.TB, s scenario, gen capmoxrender.Capmox) []*unstructured.Unstructured {
	t.Helper()
	opts := capmoxrender.Options{Capmox: gen}
	if s.lookup != nil {
		opts.Guards, opts.Networks = s.lookup, s.lookup
	}
	ctx := context.Background()
	if bytes.Contains(s.input, []byte("kind: KubernetesNodes")) {
		n, err := capmoxrender.ParseKubernetesNodes(s.input)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		objs, err := capmoxrender.RenderNodes(ctx, n, opts)
		if err != nil {
			t.Fatalf("%s (%s): %v", s.name, gen, err)
		}
		return objs
	}
	k, err := capmoxrender.ParseKubernetes(s.input)
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	objs, err := capmoxrender.RenderCluster(ctx, k, opts)
	if err != nil {
		t.Fatalf("%s (%s): %v", s.name, gen, err)
	}
	return objs
}

var generations = []capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08}

func TestGolden(t *testing.T) {
	for _, s := range loadScenarios(t) {
		for _, gen := range generations {
			t.Run(s.name+"/"+string(gen), func(t *testing.T) {
				got, err := capmoxrender.MarshalYAML(renderScenario(t, s, gen))
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata/golden", s.name+"."+string(gen)+".yaml")
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("cannot read golden file (run with -update to create it): %v", err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("render of %s for capmox %s differs from %s (-want +got):\n%s", s.name, gen, path, diff)
				}
			})
		}
	}
}

// TestGoldenAcceptedBySchema validates every capmox and CAPI object of every
// golden scenario against the upstream CRD schemas of its generation.
func TestGoldenAcceptedBySchema(t *testing.T) {
	for _, s := range loadScenarios(t) {
		for _, gen := range generations {
			t.Run(s.name+"/"+string(gen), func(t *testing.T) {
				mustValidateSchema(t, gen, renderScenario(t, s, gen))
			})
		}
	}
}
