package crdtest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

var generations = []capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08}

// capiV110 is the Cluster API release Cozystack ships with capmox v0.7.7.
const capiV110 = "sigs.k8s.io/cluster-api@v1.10.4"

type scenario struct {
	name   string
	input  []byte
	lookup *capmoxrender.Objects
}

// loadScenarios reads ../testdata/scenarios: input.yaml and an optional lookup.yaml each.
func loadScenarios(t *testing.T) []scenario {
	t.Helper()
	root := filepath.Join("..", "testdata", "scenarios")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatalf("cannot list scenarios: %v", err)
	}
	var out []scenario
	for _, d := range dirs {
		in, err := os.ReadFile(filepath.Join(root, d.Name(), "input.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		s := scenario{name: d.Name(), input: in}
		if l, err := os.ReadFile(filepath.Join(root, d.Name(), "lookup.yaml")); err == nil {
			if s.lookup, err = capmoxrender.ReadObjectsBytes(l); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, s)
	}
	return out
}

func renderScenario(t *testing.T, s scenario, gen capmoxrender.Capmox) []*unstructured.Unstructured {
	t.Helper()
	opts := capmoxrender.Options{Capmox: gen}
	if s.lookup != nil {
		opts.Guards, opts.Networks = s.lookup, s.lookup
	}
	ctx := context.Background()
	var (
		objs []*unstructured.Unstructured
		err  error
	)
	if bytes.Contains(s.input, []byte("kind: KubernetesNodes")) {
		n, perr := capmoxrender.ParseKubernetesNodes(s.input)
		if perr != nil {
			t.Fatal(perr)
		}
		objs, err = capmoxrender.RenderNodes(ctx, n, opts)
	} else {
		k, perr := capmoxrender.ParseKubernetes(s.input)
		if perr != nil {
			t.Fatal(perr)
		}
		objs, err = capmoxrender.RenderCluster(ctx, k, opts)
	}
	if err != nil {
		t.Fatalf("%s (%s): %v", s.name, gen, err)
	}
	return objs
}
