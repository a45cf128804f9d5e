package lab_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pxsubstrate/pxsubstrate/internal/fakes/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/lab"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// readTenant reads testdata's Kubernetes and KubernetesNodes.
func readTenant(t *testing.T) lab.Tenant {
	t.Helper()
	tn, err := lab.ReadTenant(filepath.Join("testdata", "kubernetes.yaml"), filepath.Join("testdata", "nodes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// TestCapmoxWorkersRun: the tenant's cluster and pool, rendered by us and
// applied with CAPI, IPAM, capmox and CABPT running, come up as Machines
// in phase Running with a nodeRef: capmox clones, sizes and starts each
// VM on the Proxmox fake with the tenant's own token, the VM boots the
// Talos configuration CABPT rendered and registers its Node.
func TestCapmoxWorkersRun(t *testing.T) {
	ctx := context.Background()
	l, err := lab.Start(ctx, lab.Options{Capmox: capi.CapmoxV09, Log: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Error(err)
		}
	})
	a, err := l.Apply(ctx, readTenant(t))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		running, state := machines(t, l.Client, "tenant-demo")
		if running == 2 {
			break
		}
		if time.Now().After(deadline) {
			for name, m := range map[string]*capi.Manager{"capmox": l.Managers.Capmox, "cabpt": l.Managers.CABPT} {
				t.Logf("--- %s:\n%s", name, m.LogTail(25))
			}
			pc := &unstructured.Unstructured{}
			pc.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1alpha2")
			pc.SetKind("ProxmoxCluster")
			_ = l.Client.Get(ctx, client.ObjectKey{Namespace: "tenant-demo", Name: a.ClusterName}, pc)
			t.Fatalf("the Machines of %s did not run: %s\nProxmoxCluster status %v\nboots %+v\nunserved %v\ndenied %v", a.ClusterName, state, pc.Object["status"], l.Boots(), l.PVE.Unserved(), l.PVE.Denied())
		}
		time.Sleep(2 * time.Second)
	}
}

// machines counts the Running Machines with a nodeRef and describes all.
func machines(t *testing.T, c client.Client, ns string) (int, string) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineList")
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	running := 0
	var out []string
	for _, m := range list.Items {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		if phase == "Running" && node != "" {
			running++
		}
		conds, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
		out = append(out, fmt.Sprintf("%s phase=%s node=%s conditions=%v", m.GetName(), phase, node, conds))
	}
	return running, strings.Join(out, "\n")
}
