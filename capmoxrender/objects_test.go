package capmoxrender_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// TestReadObjectsEveryDocument: every document of a lookup stream is read,
// empty ones passed over; an object after a document end marker, a syntax
// error or a key given twice in a later document is refused, naming the
// document and its line in the file.
func TestReadObjectsEveryDocument(t *testing.T) {
	cluster := func(name string) string {
		return "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: " + name + ", namespace: n}\n"
	}
	o, err := capmoxrender.ReadObjectsBytes([]byte("---\n---\n" + cluster("a") + "---\n# none\n---\n" + cluster("b")))
	if err != nil || len(o.Items()) != 2 || o.Items()[1].GetName() != "b" {
		t.Fatalf("two Clusters among empty documents: %v, %v", o, err)
	}
	cases := map[string]struct{ in, want string }{
		"AfterEnd":       {cluster("a") + "...\n" + cluster("b"), "document 2: yaml: line 4: did not find expected <document start>"},
		"SyntaxInSecond": {cluster("a") + "---\n" + cluster("b") + "  spec: [\n", "document 2: yaml: line 7: did not find expected key"},
		"DuplicateKey": {cluster("a") + "---\n" + cluster("b") + "kind: Other\n", `document 2: yaml: unmarshal errors:
  line 8: key "kind" already set in map`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := capmoxrender.ReadObjectsBytes([]byte(tc.in))
			if !errors.Is(err, capmoxrender.ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadObjectsBytes = %v, %v; want an invalid-input error containing %q", o, err, tc.want)
			}
		})
	}
}

// TestReadObjectsDuplicate: the same object (group, kind, namespace and
// name) given twice, in two documents or in a List and a document, is
// refused naming both places, rather than the last silently winning; the
// control, the same name in another namespace or of another kind, is two
// objects.
func TestReadObjectsDuplicate(t *testing.T) {
	network := func(ns, name, vlan string) string {
		return "apiVersion: proxmox.cozystack.io/v1alpha1\nkind: ProxmoxNetwork\nmetadata: {name: " + name + ", namespace: " + ns + "}\nstatus: {vlan: " + vlan + "}\n"
	}
	ok := network("tenant-a", "net", "100") + "---\n" + network("tenant-b", "net", "101") + "---\n" +
		"apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: net, namespace: tenant-a}\n"
	if o, err := capmoxrender.ReadObjectsBytes([]byte(ok)); err != nil || len(o.Items()) != 3 {
		t.Fatalf("three distinct objects: %v, %v", o, err)
	}
	cases := map[string]struct{ in, want string }{
		"Documents": {network("tenant-a", "net", "100") + "---\n" + network("tenant-b", "x", "1") + "---\n" + network("tenant-a", "net", "200"),
			`ProxmoxNetwork "tenant-a/net" is in document 1 (line 1) and again in document 3 (line 10): an object may be given once; remove one of the two`},
		"ListAndDocument": {"apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(network("tenant-a", "net", "100"), "\n"), "\n", "\n  ") + "\n---\n" + network("tenant-a", "net", "200"),
			`ProxmoxNetwork "tenant-a/net" is in item 1 of the List in document 1 (line 1) and again in document 2 (line 8)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := capmoxrender.ReadObjectsBytes([]byte(tc.in))
			if !errors.Is(err, capmoxrender.ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadObjectsBytes = %v, %v; want an invalid-input error containing %q", o, err, tc.want)
			}
		})
	}
}

// TestObjectsIndexMatchesNaiveStore is a state machine over Objects: Add,
// Delete and the lookups, against naiveObjects, the store that scanned
// every object before the index. After every step the two hold the same
// objects in the same order, and a lookup of any key finds what the naive
// store finds; an index left stale by Delete's shift, or by Add replacing
// in place, would point a later Add or lookup at the wrong object. How the
// index scales is measured by BenchmarkLintImagesRead, against the same
// naive store.
func TestObjectsIndexMatchesNaiveStore(t *testing.T) {
	groups := []string{"cluster.x-k8s.io/v1beta1", "cluster.x-k8s.io/v1beta2", "infrastructure.cluster.x-k8s.io/v1alpha1"}
	rapid.Check(t, func(t *rapid.T) {
		o := &capmoxrender.Objects{}
		model := &naiveObjects{}
		key := func(t *rapid.T) (apiVersion, kind, ns, name string) {
			return rapid.SampledFrom(groups).Draw(t, "apiVersion"), rapid.SampledFrom([]string{"Cluster", "Machine"}).Draw(t, "kind"),
				rapid.SampledFrom([]string{"a", "b"}).Draw(t, "namespace"), rapid.SampledFrom([]string{"x", "y", "z"}).Draw(t, "name")
		}
		serial := 0
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				apiVersion, kind, ns, name := key(t)
				serial++
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": apiVersion, "kind": kind,
					"metadata": map[string]any{"name": name, "namespace": ns},
					"spec":     map[string]any{"infrastructureRef": map[string]any{"kind": fmt.Sprintf("Kind%d", serial)}},
				}}
				o.Add(u)
				model.add(u)
			},
			"delete": func(t *rapid.T) {
				apiVersion, kind, ns, name := key(t)
				gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
				o.Delete(gk.Group, gk.Kind, ns, name)
				if i := model.find(gk, ns, name); i >= 0 {
					model.items = slices.Delete(model.items, i, i+1)
				}
			},
			"": func(t *rapid.T) {
				if !slices.Equal(o.Items(), model.items) {
					t.Fatalf("Objects holds %d objects, the naive store %d, or in another order", len(o.Items()), len(model.items))
				}
				for _, ns := range []string{"a", "b"} {
					for _, name := range []string{"x", "y", "z"} {
						got, found, err := o.ClusterInfrastructureKind(context.Background(), ns, name)
						want, wantFound := "", false
						if i := model.find(schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}, ns, name); i >= 0 {
							want, _, _ = unstructured.NestedString(model.items[i].Object, "spec", "infrastructureRef", "kind")
							wantFound = true
						}
						if err != nil || got != want || found != wantFound {
							t.Fatalf("Cluster %s/%s: lookup %q, %v, %v; the naive store has %q, %v", ns, name, got, found, err, want, wantFound)
						}
					}
				}
			},
		})
	})
}
