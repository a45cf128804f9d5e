package vpcrender

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// TestRenderAcceptedByRealCRDs creates every rendered object of every
// testdata spec in a real kube-apiserver that serves the Kube-OVN CRDs
// (v1.15.24), the in-cluster IPAM CRDs (v1.0.3), this repository's
// ProxmoxNetwork CRD and Multus' NetworkAttachmentDefinition. Strict field
// validation refuses any field a CRD does not know, and the stored spec
// must hold every value rendered, so nothing was pruned or rewritten.
func TestRenderAcceptedByRealCRDs(t *testing.T) {
	_, c := testenv.StartAPIServer(t, testenv.APIServerOptions{
		UpstreamCRDs: []string{"kube-ovn-v1.15.24"},
		CAPIIPAM:     true,
		CRDPaths:     []string{filepath.Join("..", "config", "crd", "bases", "proxmox.cozystack.io_proxmoxnetworks.yaml"), filepath.Join("testdata", "crds")},
	})
	ctx := context.Background()
	for _, ns := range []string{"tenant-a", "tenant-test", "cozy-proxmox-network"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	kinds := map[string]bool{}
	for _, in := range inputs {
		r, err := Render(loadSpec(t, in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		objs, err := r.Unstructured()
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objs {
			sent := u.DeepCopy()
			if err := c.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
				t.Errorf("%s: %s %s refused: %v", in, sent.GetKind(), sent.GetName(), err)
				continue
			}
			kinds[sent.GetKind()] = true
			if path, ok := subset(sent.Object["spec"], u.Object["spec"], "spec"); !ok {
				t.Errorf("%s: %s %s: the stored object changed %s", in, sent.GetKind(), sent.GetName(), path)
			}
			if !reflect.DeepEqual(sent.GetAnnotations(), u.GetAnnotations()) && len(sent.GetAnnotations()) > 0 {
				t.Errorf("%s: %s %s: annotations changed: %v", in, sent.GetKind(), sent.GetName(), u.GetAnnotations())
			}
		}
	}
	for _, k := range []string{"Vpc", "Subnet", "NetworkAttachmentDefinition", "InClusterIPPool", "ProxmoxNetwork", "VpcEgressGateway"} {
		if !kinds[k] {
			t.Errorf("no testdata spec renders a %s", k)
		}
	}
}

// subset reports whether every value in want is in got, and where not.
func subset(want, got any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range w {
			if p, ok := subset(v, g[k], path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := subset(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		return path, false
	}
	return "", true
}
