package capi

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// The envtest machinery logs through controller-runtime; tests read errors
// from return values instead.
func init() { ctrllog.SetLogger(logr.Discard()) }

func pool(gateway string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
		"metadata": map[string]any{"name": "p", "namespace": "default"},
		"spec":     map[string]any{"addresses": []any{"10.0.0.10-10.0.0.20"}, "prefix": int64(24), "gateway": gateway},
	}}
	return u
}

// TestStartServesWebhooksAndConversion starts both managers on a bare API
// server: the IPAM provider's webhook refuses a pool its schema admits (a
// gateway of another IP family) next to an admitted control, Cluster API's
// conversion webhook serves a v1beta1 Cluster as v1beta2, and Stop ends
// both processes by pid.
func TestStartServesWebhooksAndConversion(t *testing.T) {
	t.Parallel()
	cfg, c := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	standIn := StandInCRD("infrastructure.cluster.x-k8s.io", "v1alpha1", "TestCluster", "v1beta1")
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextv1.CustomResourceDefinition{standIn}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m, err := Start(cfg, Options{CAPI: true, IPAM: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("both managers ready in %s", time.Since(start).Round(time.Second))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = m.Stop()
		}
	})
	ctx := context.Background()
	err = c.Create(ctx, pool("fd00::1"))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided gateway and addresses are of mixed IP families") {
		t.Errorf("a pool with an IPv6 gateway for IPv4 addresses: want the webhook's Invalid, got %v", err)
	}
	if err := c.Create(ctx, pool("10.0.0.1")); err != nil {
		t.Errorf("the control pool was refused: %v", err)
	}
	old := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
		"metadata": map[string]any{"name": "c", "namespace": "default"},
		"spec": map[string]any{"paused": true, "infrastructureRef": map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "TestCluster", "name": "c",
		}},
	}}
	if err := c.Create(ctx, old); err != nil {
		t.Fatalf("a v1beta1 Cluster was refused: %v", err)
	}
	got := &metav1.PartialObjectMetadata{}
	got.SetGroupVersionKind(old.GroupVersionKind().GroupKind().WithVersion("v1beta2"))
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
		t.Errorf("the v1beta1 Cluster cannot be read as v1beta2 through the conversion webhook: %v", err)
	}
	pids := []int{m.CAPI.Pid(), m.IPAM.Pid()}
	stopped = true
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still runs after Stop (kill 0: %v)", pid, err)
		}
	}
}

// TestStartNamesLogTail gives the IPAM manager a webhook port another
// listener holds: Start fails naming the manager and the end of its log.
func TestStartNamesLogTail(t *testing.T) {
	t.Parallel()
	cfg, _ := testenv.StartAPIServer(t, testenv.APIServerOptions{CAPI: true})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	ports := func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return testproc.FreePort()
	}
	_, err = Start(cfg, Options{IPAM: true, ports: ports})
	if err == nil || !strings.Contains(err.Error(), "ipam-manager "+version(testenv.CAPIIPAMModule)+" (pid ") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("want an error naming ipam-manager and its log line about the taken port, got %v", err)
	}
}
