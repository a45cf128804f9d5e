package crdtest_test

import (
	"context"

	"github.com/go-logr/logr"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// The envtest machinery logs through controller-runtime; tests read errors
// from return values instead.
func init() { ctrllog.SetLogger(logr.Discard()) }

// noUpstreamCRD are the kinds rendered next to the capmox objects whose CRDs
// (Kamaji, the Talos bootstrap provider, Flux) are neither in third_party/crds
// nor in a served Go module; the API server cannot judge them.
var noUpstreamCRD = map[string]bool{"KamajiControlPlane": true, "TalosConfigTemplate": true, "HelmRelease": true}

// apiServer starts a real kube-apiserver holding the CRDs of one capmox
// generation: capmox v0.7.7 with CAPI v1.10.4, or capmox v0.9.0 with CAPI
// v1.14.2; both with the in-cluster IPAM provider. The two capmox releases
// define the same CRD names, so each needs its own server.
func apiServer(t *testing.T, gen capmoxrender.Capmox) client.Client {
	t.Helper()
	o := testenv.APIServerOptions{CAPIIPAM: true}
	if gen == capmoxrender.CapmoxV07 {
		dir, err := testenv.ModuleCRDDir(capiV110)
		if err != nil {
			t.Fatal(err)
		}
		o.UpstreamCRDs = append(o.UpstreamCRDs, "capmox-v0.7.7")
		o.CRDPaths = []string{dir}
	} else {
		o.UpstreamCRDs = append(o.UpstreamCRDs, "capmox-v0.9.0")
		o.CAPI = true
	}
	_, c := testenv.StartAPIServer(t, o)
	return c
}

// TestGoldenAcceptedByAPIServer creates every object of every golden
// scenario with a server-side dry run against a real API server of its
// generation, and checks a rejected control so the test can fail.
func TestGoldenAcceptedByAPIServer(t *testing.T) {
	ctx := context.Background()
	for _, gen := range generations {
		t.Run(string(gen), func(t *testing.T) {
			c := apiServer(t, gen)
			created := map[string]bool{}
			for _, s := range loadScenarios(t) {
				for _, o := range scenario.RenderT(t, s, gen) {
					ensureNamespace(t, c, o.GetNamespace(), created)
					if noUpstreamCRD[o.GetKind()] {
						continue
					}
					if err := c.Create(ctx, o.DeepCopy(), client.DryRunAll); err != nil {
						t.Errorf("%s: %s %s/%s rejected by the API server: %v", s.Name, o.GetKind(), o.GetNamespace(), o.GetName(), err)
					}
				}
			}
			rejectedControl(t, c, gen)
		})
	}
}

func ensureNamespace(t *testing.T, c client.Client, ns string, done map[string]bool) {
	t.Helper()
	if done[ns] {
		return
	}
	err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("cannot create namespace %s: %v", ns, err)
	}
	done[ns] = true
}

// rejectedControl sends what capmoxrender refuses to emit (memoryMiB 954,
// the unrounded 1G) and checks that the server rejects it as Invalid.
func rejectedControl(t *testing.T, c client.Client, gen capmoxrender.Capmox) {
	t.Helper()
	objs := scenario.RenderT(t, loadScenarios(t)[0], gen)
	for _, s := range loadScenarios(t) {
		if s.Name == "nodes-full-storage" {
			objs = scenario.RenderT(t, s, gen)
		}
	}
	pmt := objs[0].DeepCopy()
	if pmt.GetKind() != "ProxmoxMachineTemplate" {
		t.Fatalf("want the ProxmoxMachineTemplate first, got %s", pmt.GetKind())
	}
	if err := unstructured.SetNestedField(pmt.Object, int64(954), "spec", "template", "spec", "memoryMiB"); err != nil {
		t.Fatal(err)
	}
	err := c.Create(context.Background(), pmt, client.DryRunAll)
	if !apierrors.IsInvalid(err) {
		t.Errorf("memoryMiB 954 must be rejected as Invalid by the capmox %s schema, got %v", gen, err)
	}
}
