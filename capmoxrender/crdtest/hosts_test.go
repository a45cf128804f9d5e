package crdtest_test

import (
	"context"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
)

// TestHostEntriesJobPrivileges creates the seed pool's objects on a real
// API server (v0.8 generation) and asks the server's RBAC what the
// host-entries Job's ServiceAccount may do: read its control plane Service
// and read and patch its own TalosConfigTemplate, nothing else.
func TestHostEntriesJobPrivileges(t *testing.T) {
	ctx := context.Background()
	gen := capmoxrender.CapmoxV08
	c := apiServer(t, gen)
	if err := authzv1.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	var seed []string
	for _, s := range loadScenarios(t) {
		if s.Name != "nodes-seed" {
			continue
		}
		created := map[string]bool{}
		for _, o := range scenario.RenderT(t, s, gen) {
			ensureNamespace(t, c, o.GetNamespace(), created)
			if noUpstreamCRD[o.GetKind()] {
				if o.GetKind() == "TalosConfigTemplate" {
					seed = append(seed, o.GetName())
				}
				continue
			}
			if err := c.Create(ctx, o.DeepCopy()); err != nil {
				t.Fatalf("%s %s/%s rejected by the API server: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	if len(seed) != 1 {
		t.Fatalf("want one TalosConfigTemplate in the seed pool, got %v", seed)
	}
	const ns = "tenant-demo"
	user := "system:serviceaccount:" + ns + ":" + capmoxrender.HostEntriesName("kubernetes-demo", "workers")
	cases := []struct {
		verb, group, resource, name string
		allowed                     bool
	}{
		{"get", "", "services", "kubernetes-demo", true},
		{"get", "", "services", "kubernetes-other", false},
		{"list", "", "services", "", false},
		{"patch", "", "services", "kubernetes-demo", false},
		{"get", capmoxrender.TalosGroup, "talosconfigtemplates", seed[0], true},
		{"patch", capmoxrender.TalosGroup, "talosconfigtemplates", seed[0], true},
		{"patch", capmoxrender.TalosGroup, "talosconfigtemplates", "kubernetes-demo-other-000000", false},
		{"delete", capmoxrender.TalosGroup, "talosconfigtemplates", seed[0], false},
		{"list", capmoxrender.TalosGroup, "talosconfigtemplates", "", false},
		{"get", "", "secrets", "kubernetes-demo-admin-kubeconfig", false},
	}
	for _, tc := range cases {
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{
				Namespace: ns, Verb: tc.verb, Group: tc.group, Resource: tc.resource, Name: tc.name,
			},
		}}
		if err := c.Create(ctx, sar, &client.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tc.allowed {
			t.Errorf("%s %s/%s %q: allowed=%t, want %t (%s)", tc.verb, tc.group, tc.resource, tc.name, sar.Status.Allowed, tc.allowed, sar.Status.Reason)
		}
	}
}
