package capitest_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
)

// TestClusterAPIWebhookRefusesControl sends the seed pool's
// MachineDeployment with a selector its template's labels do not match,
// which the CRD schema admits and Cluster API's webhook refuses, next to the
// unchanged one, admitted (both as server-side dry runs).
func TestClusterAPIWebhookRefusesControl(t *testing.T) {
	for _, gen := range generations {
		t.Run(string(gen), func(t *testing.T) {
			t.Parallel()
			c := servers[gen].c
			for _, s := range loadScenarios(t) {
				if s.Name != "nodes-seed" {
					continue
				}
				objs := scenario.RenderT(t, s, gen)
				ns := nsName(gen, s) + "-control"
				relocate(objs, ns)
				create(t, c, ns, nil)
				md := only(t, objs, "MachineDeployment")
				if err := c.Create(context.Background(), md.DeepCopy(), client.DryRunAll); err != nil {
					t.Fatalf("the control MachineDeployment was refused: %v", err)
				}
				bad := md.DeepCopy()
				_ = unstructured.SetNestedStringMap(bad.Object, map[string]string{"pool": "other"}, "spec", "selector", "matchLabels")
				err := c.Create(context.Background(), bad, client.DryRunAll)
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `admission webhook "validation.machinedeployment.cluster.x-k8s.io" denied the request`) {
					t.Errorf("a selector the template labels do not match: want Cluster API's webhook to refuse it, got %v", err)
				}
			}
		})
	}
}

// TestTalosWebhookRefusesControl sends a TalosConfig with the spec of the
// seed pool's TalosConfigTemplate, as Cluster API clones it for each
// Machine, which CABPT's webhook admits, and the same with a hostname
// source CABPT does not know, which the CRD schema admits and CABPT's
// webhook refuses (both as server-side dry runs).
func TestTalosWebhookRefusesControl(t *testing.T) {
	for _, gen := range generations {
		t.Run(string(gen), func(t *testing.T) {
			t.Parallel()
			c := servers[gen].c
			for _, s := range loadScenarios(t) {
				if s.Name != "nodes-seed" {
					continue
				}
				objs := scenario.RenderT(t, s, gen)
				ns := nsName(gen, s) + "-talos"
				relocate(objs, ns)
				create(t, c, ns, nil)
				tct := only(t, objs, "TalosConfigTemplate")
				spec, _, _ := unstructured.NestedMap(tct.Object, "spec", "template", "spec")
				tc := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": tct.GetAPIVersion(), "kind": "TalosConfig",
					"metadata": map[string]any{"name": tct.GetName(), "namespace": ns},
					"spec":     spec,
				}}
				if err := c.Create(context.Background(), tc.DeepCopy(), client.DryRunAll); err != nil {
					t.Fatalf("a TalosConfig of the rendered template's spec was refused: %v", err)
				}
				_ = unstructured.SetNestedField(tc.Object, "DNS", "spec", "hostname", "source")
				err := c.Create(context.Background(), tc, client.DryRunAll)
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `admission webhook "vtalosconfig.cluster.x-k8s.io" denied the request`) ||
					!strings.Contains(err.Error(), `spec.hostname.source: Invalid value: "DNS"`) {
					t.Errorf("a hostname source CABPT does not know: want CABPT's webhook to refuse it, got %v", err)
				}
			}
		})
	}
}
