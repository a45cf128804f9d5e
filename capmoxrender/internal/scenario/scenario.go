// Package scenario loads the render scenarios under capmoxrender/testdata
// (input.yaml with a Kubernetes or KubernetesNodes object, an optional
// lookup.yaml of live objects, options.yaml of render options and
// pci-mappings.json, the answer of GET /cluster/mapping/pci) and renders
// them, for the golden and API server tests. It reads files and never
// writes.
package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
)

// Scenario is one folder of testdata/scenarios.
type Scenario struct {
	Name   string
	Input  []byte
	Lookup *capmoxrender.Objects
	// VMIDRanges come from options.yaml (vmIDRanges: {POOL: {start, end}}).
	VMIDRanges map[string]capmoxrender.VMIDRange
	// PoolTenants come from options.yaml (tenants: {POOL: {name,
	// pciMappings}}).
	PoolTenants map[string]capmoxrender.PoolTenant
	// PCIMappings come from pci-mappings.json.
	PCIMappings []capmoxrender.PCIMapping
}

type options struct {
	VMIDRanges map[string]struct {
		Start int64 `json:"start"`
		End   int64 `json:"end"`
	} `json:"vmIDRanges"`
	Tenants map[string]struct {
		Name        string   `json:"name"`
		PCIMappings []string `json:"pciMappings"`
	} `json:"tenants"`
}

// Load reads every scenario folder under dir, in name order.
func Load(dir string) ([]Scenario, error) {
	dirs, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list scenarios: %w", err)
	}
	var out []Scenario
	for _, d := range dirs {
		p := filepath.Join(dir, d.Name())
		in, err := os.ReadFile(filepath.Join(p, "input.yaml"))
		if err != nil {
			return nil, fmt.Errorf("cannot read scenario %s: %w", p, err)
		}
		s := Scenario{Name: d.Name(), Input: in}
		if l, err := os.ReadFile(filepath.Join(p, "lookup.yaml")); err == nil {
			if s.Lookup, err = capmoxrender.ReadObjectsBytes(l); err != nil {
				return nil, fmt.Errorf("cannot read the lookup of %s: %w", p, err)
			}
		}
		if err := readOptions(filepath.Join(p, "options.yaml"), &s); err != nil {
			return nil, err
		}
		if m, err := os.ReadFile(filepath.Join(p, "pci-mappings.json")); err == nil {
			if s.PCIMappings, err = capmoxrender.ParsePCIMappings(m); err != nil {
				return nil, fmt.Errorf("cannot read the PCI mappings of %s: %w", p, err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// Render renders s for one capmox generation, with its lookup (if any) as
// guards, networks and templates.
func Render(ctx context.Context, s Scenario, gen capmoxrender.Capmox) ([]*unstructured.Unstructured, error) {
	opts := capmoxrender.Options{Capmox: gen, VMIDRanges: s.VMIDRanges, PoolTenants: s.PoolTenants, PCIMappings: s.PCIMappings}
	if s.Lookup != nil {
		opts.Guards, opts.Networks, opts.Templates, opts.Clusters = s.Lookup, s.Lookup, s.Lookup, s.Lookup
	}
	if bytes.Contains(s.Input, []byte("kind: KubernetesNodes")) {
		n, err := capmoxrender.ParseKubernetesNodes(s.Input)
		if err != nil {
			return nil, err
		}
		return capmoxrender.RenderNodes(ctx, n, opts)
	}
	k, err := capmoxrender.ParseKubernetes(s.Input)
	if err != nil {
		return nil, err
	}
	return capmoxrender.RenderCluster(ctx, k, opts)
}

func readOptions(path string, s *Scenario) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	var o options
	if err := strictyaml.Unmarshal(data, &o); err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	s.VMIDRanges = map[string]capmoxrender.VMIDRange{}
	for pool, r := range o.VMIDRanges {
		s.VMIDRanges[pool] = capmoxrender.VMIDRange{Start: r.Start, End: r.End}
	}
	if o.Tenants != nil {
		s.PoolTenants = map[string]capmoxrender.PoolTenant{}
		for pool, t := range o.Tenants {
			s.PoolTenants[pool] = capmoxrender.PoolTenant{Name: t.Name, PCIMappings: t.PCIMappings}
		}
	}
	return nil
}

// LoadT is Load for a test of a folder beside capmoxrender: it reads
// ../testdata/scenarios and fails t when it cannot.
func LoadT(t testing.TB) []Scenario {
	t.Helper()
	s, err := Load(filepath.Join("..", "testdata", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// RenderT is Render failing t, naming the scenario and generation, when
// the render fails.
func RenderT(t testing.TB, s Scenario, gen capmoxrender.Capmox) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Render(context.Background(), s, gen)
	if err != nil {
		t.Fatalf("%s (%s): %v", s.Name, gen, err)
	}
	return objs
}
