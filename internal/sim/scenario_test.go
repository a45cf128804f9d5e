package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// TestScenarios runs every scenario under testdata/scenarios: each must
// run to the end with every expectation holding, and must expect
// something. The object files they apply live in testdata/fixtures.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "steps:") {
			t.Errorf("%s has no steps: an object file belongs in testdata/fixtures", f)
			continue
		}
		ran++
		t.Run(filepath.Base(f), func(t *testing.T) {
			rep, err := sim.RunFile(context.Background(), f, data)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), "expect:") {
				t.Fatal("a scenario under testdata/scenarios must expect something")
			}
			for _, f := range rep.Failures {
				t.Error(f)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no scenario found under testdata/scenarios")
	}
}
