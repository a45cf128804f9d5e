package capitest_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
)

var generations = []capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08}

func loadScenarios(t *testing.T) []scenario.Scenario { t.Helper(); return scenario.LoadT(t) }

func isNodes(s scenario.Scenario) bool {
	return bytes.Contains(s.Input, []byte("kind: KubernetesNodes"))
}

// clusterFor renders the Cluster a pool scenario joins: the cluster scenario
// of the pool's namespace, or, for the seed's pool (whose example has no
// cluster scenario of its own), the IPv4 cluster scenario, in both cases
// renamed to the pool's spec.cluster and namespace before rendering.
func clusterFor(t *testing.T, pool scenario.Scenario, all []scenario.Scenario, gen capmoxrender.Capmox) []*unstructured.Unstructured {
	t.Helper()
	n, err := capmoxrender.ParseKubernetesNodes(pool.Input)
	if err != nil {
		t.Fatal(err)
	}
	var src *scenario.Scenario
	for i, s := range all {
		if isNodes(s) {
			continue
		}
		k, err := capmoxrender.ParseKubernetes(s.Input)
		if err != nil {
			t.Fatal(err)
		}
		if k.Namespace == n.Namespace || src == nil && s.Name == "cluster-ipv4" {
			src = &all[i]
		}
	}
	k, _ := capmoxrender.ParseKubernetes(src.Input)
	k.Name, k.Namespace = n.Spec.Cluster, n.Namespace
	opts := capmoxrender.Options{Capmox: gen, VMIDRanges: src.VMIDRanges}
	if src.Lookup != nil {
		opts.Guards, opts.Networks, opts.Templates, opts.Clusters = src.Lookup, src.Lookup, src.Lookup, src.Lookup
	}
	objs, err := capmoxrender.RenderCluster(context.Background(), k, opts)
	if err != nil {
		t.Fatalf("the cluster of %s from %s: %v", pool.Name, src.Name, err)
	}
	return objs
}

// relocate moves every object into ns, and every namespace field that named
// the scenario's own namespace (a v1beta1 reference's, a credentials
// reference's) with it, so that scenarios sharing a namespace and names do
// not meet.
func relocate(objs []*unstructured.Unstructured, ns string) {
	for _, o := range objs {
		old := o.GetNamespace()
		o.SetNamespace(ns)
		renameNamespace(o.Object, old, ns)
	}
}

func renameNamespace(v any, old, ns string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "namespace" && s == old {
				x[k] = ns
				continue
			}
			renameNamespace(e, old, ns)
		}
	case []any:
		for _, e := range x {
			renameNamespace(e, old, ns)
		}
	}
}

// nsName is a namespace of its own for a scenario of a generation.
func nsName(gen capmoxrender.Capmox, s scenario.Scenario) string {
	return strings.NewReplacer(".", "", "+", "").Replace(string(gen)) + "-" + s.Name
}

func create(t *testing.T, c client.Client, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o.DeepCopy()); err != nil {
			t.Errorf("%s %s/%s refused: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// eventually polls cond every half second for up to two minutes and fails t
// with cond's last word when it never holds.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, why)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func list(t *testing.T, c client.Client, kind, ns string, labels map[string]string) []unstructured.Unstructured {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	l.SetKind(kind + "List")
	if err := c.List(context.Background(), l, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}
