package charts

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/internal/controller"
)

// Names of the charts (folders beside this file) and where they install.
const (
	crdsChart = "proxmox-network-crds"
	mainChart = "proxmox-network"
	namespace = "cozy-proxmox-network"
	testImage = "proxmox-network-controller:dev"
)

// helmLabels are the labels the charts add on top of the manifests under
// config/.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart"}

// values parses YAML values; the image is set unless the YAML sets it.
func values(t testing.TB, doc string) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("test values: %v", err)
	}
	c, _ := v["proxmoxNetworkController"].(map[string]any)
	if c == nil {
		c = map[string]any{}
		v["proxmoxNetworkController"] = c
	}
	if _, ok := c["image"]; !ok {
		c["image"] = testImage
	}
	return v
}

// render renders chart with vals as release name in namespace, as
// `helm template` does: values coalesced with the chart's, checked
// against values.schema.json, templates executed.
func render(chart string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(chart)
	if err != nil {
		return nil, err
	}
	opts := chartutil.ReleaseOptions{Name: chart, Namespace: namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") || strings.HasPrefix(filepath.Base(name), "_") {
			continue
		}
		objs, err := decode(files[name])
		if err != nil {
			return nil, errors.New(name + ": " + err.Error())
		}
		out = append(out, objs...)
	}
	return out, nil
}

// mustRender renders or fails the test.
func mustRender(t testing.TB, chart string, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render(chart, vals)
	if err != nil {
		t.Fatalf("render %s: %v", chart, err)
	}
	return objs
}

// decode splits a multi-document YAML stream into objects, skipping empty
// documents.
func decode(s string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(s)), 4096)
	for {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// key names an object as "Kind namespace/name".
func key(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// index lists the objects' keys, sorted.
func index(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, key(o))
	}
	slices.Sort(out)
	return out
}

// find returns the object with key k, or nil.
func find(objs []*unstructured.Unstructured, k string) *unstructured.Unstructured {
	for _, o := range objs {
		if key(o) == k {
			return o
		}
	}
	return nil
}

// mustFind returns the object with key k or fails.
func mustFind(t testing.TB, objs []*unstructured.Unstructured, k string) *unstructured.Unstructured {
	t.Helper()
	o := find(objs, k)
	if o == nil {
		t.Fatalf("no %s among %v", k, index(objs))
	}
	return o
}

// withoutHelmLabels returns a copy of o without Helm's labels.
func withoutHelmLabels(o *unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	labels := c.GetLabels()
	for _, l := range helmLabels {
		delete(labels, l)
	}
	if len(labels) == 0 {
		labels = nil
	}
	c.SetLabels(labels)
	return c
}

// args returns the controller container's args of the Deployment in objs.
func args(t testing.TB, objs []*unstructured.Unstructured) []string {
	t.Helper()
	d := mustFind(t, objs, "Deployment "+namespace+"/proxmox-network-controller")
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("the Deployment has %d containers", len(cs))
	}
	var out []string
	for _, a := range cs[0].(map[string]any)["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

// parseArgs parses and validates the controller's args as its Main does.
func parseArgs(o *controller.Options, args []string) error {
	fs := pflag.NewFlagSet("proxmox-network-controller", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return o.Validate()
}

// coalesce returns vals over the chart's defaults, as the templates see them.
func coalesce(t testing.TB, chart string, vals map[string]any) map[string]any {
	t.Helper()
	ch, err := loader.Load(chart)
	if err != nil {
		t.Fatal(err)
	}
	out, err := chartutil.CoalesceValues(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
