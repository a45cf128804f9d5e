package capmoxrender_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	testscenario "github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

type scenario = testscenario.Scenario

func loadScenarios(t testing.TB) []scenario {
	t.Helper()
	s, err := testscenario.Load(filepath.Join("testdata", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// renderScenario renders s for one capmox generation.
func renderScenario(t testing.TB, s scenario, gen capmoxrender.Capmox) []*unstructured.Unstructured {
	t.Helper()
	objs, err := testscenario.Render(context.Background(), s, gen)
	if err != nil {
		t.Fatalf("%s (%s): %v", s.Name, gen, err)
	}
	return objs
}

var generations = []capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08}

func TestGolden(t *testing.T) {
	for _, s := range loadScenarios(t) {
		for _, gen := range generations {
			t.Run(s.Name+"/"+string(gen), func(t *testing.T) {
				got, err := capmoxrender.MarshalYAML(renderScenario(t, s, gen))
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata/golden", s.Name+"."+string(gen)+".yaml")
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
					t.Errorf("render of %s for capmox %s differs from %s (-want +got):\n%s", s.Name, gen, path, diff)
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
			t.Run(s.Name+"/"+string(gen), func(t *testing.T) {
				mustValidateSchema(t, gen, renderScenario(t, s, gen))
			})
		}
	}
}
