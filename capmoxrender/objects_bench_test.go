package capmoxrender_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
)

// naiveObjects is the object store ReadObjectsBytes used before its index:
// Add scans every object read so far for one of the same group, kind,
// namespace and name, so reading n objects costs n²/2 comparisons, each
// parsing two apiVersions. Kept to measure the index against.
type naiveObjects struct{ items []*unstructured.Unstructured }

func (o *naiveObjects) add(u *unstructured.Unstructured) {
	if i := o.find(u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName()); i >= 0 {
		o.items[i] = u
		return
	}
	o.items = append(o.items, u)
}

// find returns the index of the object of gk named namespace/name, or -1,
// comparing it with every object held.
func (o *naiveObjects) find(gk schema.GroupKind, namespace, name string) int {
	return slices.IndexFunc(o.items, func(have *unstructured.Unstructured) bool {
		return have.GroupVersionKind().GroupKind() == gk && have.GetNamespace() == namespace && have.GetName() == name
	})
}

// naiveReadObjects is ReadObjectsBytes as it was, over naiveObjects.
func naiveReadObjects(b []byte) ([]*unstructured.Unstructured, error) {
	docs, err := strictyaml.Documents(b)
	if err != nil {
		return nil, err
	}
	o := &naiveObjects{}
	for _, d := range docs {
		var m map[string]any
		if err := strictyaml.UnmarshalJSON(d.JSON, &m); err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for j := range l.Items {
				o.add(&l.Items[j])
			}
			continue
		}
		o.add(u)
	}
	return o.items, nil
}

// deployments is a manifest stream of n Deployments, one container each,
// pinned by digest: what `lint images` reads from a large render or from
// kubectl get deployments -A -o yaml.
func deployments(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app-%d, namespace: tenant-%d}\n"+
			"spec:\n  template:\n    spec:\n      containers:\n      - {name: c, image: \"ghcr.io/org/app:v1.%d@sha256:%064x\"}\n", i, i%50, i, i)
	}
	return []byte(b.String())
}

// BenchmarkLintImagesRead measures what `pxsubstrate lint images` does
// with its input, reading the objects and listing their images, at 1,000,
// 4,000 and 8,000 Deployments: through ReadObjectsBytes (indexed) and
// through the naive store it replaced, in the same run. It reports both
// times per read and their ratio, and fails when the two disagree.
func BenchmarkLintImagesRead(b *testing.B) {
	for _, n := range []int{1000, 4000, 8000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			data := deployments(n)
			var naive, fast time.Duration
			for b.Loop() {
				t0 := time.Now()
				items, err := naiveReadObjects(data)
				if err != nil {
					b.Fatal(err)
				}
				old := capmoxrender.LintImages(items)
				t1 := time.Now()
				objs, err := capmoxrender.ReadObjectsBytes(data)
				if err != nil {
					b.Fatal(err)
				}
				got := capmoxrender.LintImages(objs.Items())
				fast += time.Since(t1)
				naive += t1.Sub(t0)
				if len(got) != n || len(old) != n {
					b.Fatalf("%d objects: %d images read, %d by the naive store", n, len(got), len(old))
				}
			}
			b.ReportMetric(float64(naive)/float64(fast), "naive/indexed")
			b.ReportMetric(float64(fast.Milliseconds())/float64(b.N), "indexed-ms/op")
			b.ReportMetric(float64(naive.Milliseconds())/float64(b.N), "naive-ms/op")
		})
	}
}
