package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// TestScenarios runs every scenario under testdata: each must run to the
// end with every expectation holding, and must expect something.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
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
			continue // an apply file, not a scenario
		}
		ran++
		t.Run(filepath.Base(f), func(t *testing.T) {
			rep, err := sim.RunFile(context.Background(), f, data)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), "expect:") {
				t.Fatal("a scenario under testdata must expect something")
			}
			for _, f := range rep.Failures {
				t.Error(f)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no scenario found under testdata")
	}
}
