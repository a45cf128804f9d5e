package crdtest_test

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
)

var generations = []capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08}

// capiV110 is the Cluster API release Cozystack ships with capmox v0.7.7.
const capiV110 = "sigs.k8s.io/cluster-api@v1.10.4"

func loadScenarios(t *testing.T) []scenario.Scenario {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "testdata", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func renderScenario(t *testing.T, s scenario.Scenario, gen capmoxrender.Capmox) []*unstructured.Unstructured {
	t.Helper()
	objs, err := scenario.Render(context.Background(), s, gen)
	if err != nil {
		t.Fatalf("%s (%s): %v", s.Name, gen, err)
	}
	return objs
}
