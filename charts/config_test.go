package charts

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
)

// TestConfigEqualsCharts: the kustomize trees under config/ hold the same
// objects as the charts with the matching values (Helm's labels aside);
// the objects only one side has are listed here with the reason.
func TestConfigEqualsCharts(t *testing.T) {
	crds := mustRender(t, crdsChart, nil)
	cases := map[string]struct {
		dir        string
		values     string
		onlyConfig []string
		onlyChart  []string
	}{
		"Policies": {
			dir:        "config",
			values:     "alerts: {enabled: false}",
			onlyConfig: []string{"Namespace /" + namespace}, // helm install --create-namespace
			onlyChart:  []string{"ClusterRole /cozy:proxmox-network:view"},
		},
		"Webhook": {
			dir:        "config/webhook",
			values:     "alerts: {enabled: false}\nadmission: {webhook: {enabled: true, certManager: false}}\nproxmoxNetworkController: {replicas: 2}",
			onlyConfig: []string{"Namespace /" + namespace},
			onlyChart:  []string{"ClusterRole /cozy:proxmox-network:view"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			config := controllertest.Kustomize(t, tc.dir)
			chart := mustRender(t, mainChart, values(t, tc.values))
			chart = append(chart, crds...)
			var onlyConfig, onlyChart []string
			for _, o := range config {
				c := find(chart, key(o))
				if c == nil {
					onlyConfig = append(onlyConfig, key(o))
					continue
				}
				want, got := comparable(o), comparable(c)
				if diff := cmp.Diff(want.Object, got.Object); diff != "" {
					t.Errorf("%s differs between %s and the chart: -config +chart:\n%s", key(o), tc.dir, diff)
				}
			}
			for _, o := range chart {
				if find(config, key(o)) == nil {
					onlyChart = append(onlyChart, key(o))
				}
			}
			if diff := cmp.Diff(tc.onlyConfig, onlyConfig); diff != "" {
				t.Errorf("objects only %s has: -want +got:\n%s", tc.dir, diff)
			}
			if diff := cmp.Diff(tc.onlyChart, onlyChart); diff != "" {
				t.Errorf("objects only the chart has: -want +got:\n%s", diff)
			}
		})
	}
}

// comparable drops what legitimately differs: Helm's labels, and the
// webhook's checksum annotation that restarts it on a values change.
func comparable(o *unstructured.Unstructured) *unstructured.Unstructured {
	c := withoutHelmLabels(o)
	unstructured.RemoveNestedField(c.Object, "spec", "template", "metadata", "annotations")
	return c
}

// TestCRDChartEqualsConfig: the CRDs chart's templates are the files of
// config/crd/bases, byte for byte (hack/generate.sh writes both).
func TestCRDChartEqualsConfig(t *testing.T) {
	bases, err := filepath.Glob("../config/crd/bases/*.yaml")
	if err != nil || len(bases) == 0 {
		t.Fatalf("no CRDs under config/crd/bases: %v", err)
	}
	templates, _ := filepath.Glob(crdsChart + "/templates/*.yaml")
	if len(templates) != len(bases) {
		t.Errorf("the CRDs chart has %d templates, config/crd/bases %d files", len(templates), len(bases))
	}
	for _, b := range bases {
		want, _ := os.ReadFile(b)
		got, err := os.ReadFile(filepath.Join(crdsChart, "templates", filepath.Base(b)))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s/templates/%s differs from %s (run hack/generate.sh): %v", crdsChart, filepath.Base(b), b, err)
		}
	}
	crds := mustRender(t, crdsChart, nil)
	if diff := cmp.Diff([]string{
		"CustomResourceDefinition /proxmoxnetworks.proxmox.cozystack.io",
		"CustomResourceDefinition /proxmoxnetworkzones.proxmox.cozystack.io",
		"CustomResourceDefinition /proxmoxvlanclaims.proxmox.cozystack.io",
	}, index(crds)); diff != "" {
		t.Errorf("CRDs chart: -want +got:\n%s", diff)
	}
}
