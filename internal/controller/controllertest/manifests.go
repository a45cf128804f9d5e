package controllertest

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Kustomize builds dir, relative to the repository root, with the load
// restrictions of `kubectl kustomize`, and returns its objects.
func Kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(RepoRoot(t), dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	y, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(y), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// Apply applies objs through c, server-side, as a dry run when dryRun, and
// reports each failure on t. Namespaces and CRDs go first, as kubectl
// applies them.
func Apply(t testing.TB, c client.Client, objs []*unstructured.Unstructured, dryRun bool) {
	t.Helper()
	first := func(o *unstructured.Unstructured) int {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition":
			return 0
		}
		return 1
	}
	objs = slices.Clone(objs)
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return first(a) - first(b) })
	for _, o := range objs {
		o = o.DeepCopy()
		opts := []client.PatchOption{client.FieldOwner("pxsubstrate-test"), client.ForceOwnership}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := c.Patch(context.Background(), o, client.Apply, opts...); err != nil { //nolint:staticcheck // unstructured apply
			t.Errorf("apply %s %s/%s (dry run %v): %v", o.GetKind(), o.GetNamespace(), o.GetName(), dryRun, err)
		}
	}
}
