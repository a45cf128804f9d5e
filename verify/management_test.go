package verify

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestCheckManagement(t *testing.T) {
	poolGVK := schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1alpha2", Kind: "InClusterIPPool"}
	pcGVK := schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Kind: "ProxmoxCluster"}
	scheme := func(withIPAM bool) *runtime.Scheme {
		s := runtime.NewScheme()
		kinds := []schema.GroupVersionKind{pcGVK}
		if withIPAM {
			kinds = append(kinds, poolGVK)
		}
		for _, k := range kinds {
			s.AddKnownTypeWithName(k, &unstructured.Unstructured{})
			s.AddKnownTypeWithName(k.GroupVersion().WithKind(k.Kind+"List"), &unstructured.UnstructuredList{})
		}
		return s
	}
	proxmoxCluster := func(annotations map[string]string) client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(pcGVK)
		u.SetNamespace("tenant-a")
		u.SetName("kubernetes-a")
		u.SetAnnotations(annotations)
		return u
	}
	cases := map[string]struct {
		reason   string
		withIPAM bool
		objs     []client.Object
		want     []string
	}{
		"Healthy": {
			reason:   "an IPAM provider and a plain ProxmoxCluster give no finding",
			withIPAM: true,
			objs:     []client.Object{proxmoxCluster(map[string]string{"other": "x"})},
		},
		"NoClusterYet": {
			reason:   "a missing ProxmoxCluster is not a management problem",
			withIPAM: true,
		},
		"IPAMMissing": {
			reason: "no InClusterIPPool kind means the IPAM provider is missing",
			objs:   []client.Object{proxmoxCluster(nil)},
			want:   []string{CodeIPAMProviderMissing},
		},
		"ManagedBy": {
			reason:   "the managed-by annotation blocks the ownerRef",
			withIPAM: true,
			objs:     []client.Object{proxmoxCluster(map[string]string{AnnotationManagedBy: "cozystack"})},
			want:     []string{CodeManagedByAnnotation},
		},
		"Both": {
			reason: "both problems are reported at once",
			objs:   []client.Object{proxmoxCluster(map[string]string{AnnotationManagedBy: ""})},
			want:   []string{CodeIPAMProviderMissing, CodeManagedByAnnotation},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkManagementCodes(t, scheme(tc.withIPAM), tc.objs, tc.reason, tc.want)
		})
	}
}

// checkManagementCodes runs CheckManagement for tenant-a/kubernetes-a on a
// fake management cluster serving s's kinds and holding objs, and compares
// the finding codes; every finding must say its problem and its fix.
func checkManagementCodes(t *testing.T, s *runtime.Scheme, objs []client.Object, reason string, want []string) {
	t.Helper()
	got, err := checkOnFake(s, objs)
	if err != nil {
		t.Fatalf("%s: %v", reason, err)
	}
	var codes []string
	for _, f := range got {
		codes = append(codes, f.Code)
		if f.Problem == "" || f.Fix == "" {
			t.Errorf("%s: finding %s lacks a problem or a fix", reason, f.Code)
		}
	}
	if diff := cmp.Diff(want, codes); diff != "" {
		t.Errorf("%s: -want +got:\n%s", reason, diff)
	}
}

// checkOnFake runs CheckManagement for tenant-a/kubernetes-a on a fake
// management cluster serving s's kinds and holding objs.
func checkOnFake(s *runtime.Scheme, objs []client.Object) ([]ManagementFinding, error) {
	mapper := meta.NewDefaultRESTMapper(s.PreferredVersionAllGroups())
	for gvk := range s.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).Build()
	return CheckManagement(context.Background(), c, c.RESTMapper(), "tenant-a", "kubernetes-a")
}
