package cli

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

// vpcRun runs `pxsubstrate render vpc` in-process: stdout, and the error
// as Main reports it (exit code and stderr).
func vpcRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, errOut, code := admissionRun(t, args...)
	if code == 0 {
		return out, nil
	}
	if code != 1 || !strings.HasPrefix(errOut, "Error: ") {
		t.Fatalf("a render failure exits 1 with Error: on stderr; got exit %d, stderr %q", code, errOut)
	}
	return out, errors.New(strings.TrimSuffix(strings.TrimPrefix(errOut, "Error: "), "\n"))
}

const vpcSpec = `namespace: tenant-test
name: net
subnets:
  - name: private
    cidr: 10.208.64.0/24
    proxmox: {}
`

const vpcLookup = `apiVersion: v1
kind: List
items:
- apiVersion: proxmox.cozystack.io/v1alpha1
  kind: ProxmoxNetworkZone
  metadata: {name: default}
  spec: {bridge: vmbr70, providerNetwork: pxtenant, vlanRanges: ["101-199"], mtu: 8996}
`

func TestRenderVPC(t *testing.T) {
	dir := admissionFiles(t, map[string]string{
		"vpc.yaml":    vpcSpec,
		"lookup.yaml": vpcLookup,
		"route.yaml":  vpcSpec + "routes: [{cidr: 10.208.128.0/24, nextHopIP: 10.70.0.12}]\nzones: [{name: default}]\n",
	})
	p := func(n string) string { return filepath.Join(dir, n) }

	out, err := vpcRun(t, "render", "vpc", "-f", p("vpc.yaml"), "--lookup", p("lookup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: vpc-a40741", "name: subnet-b10ab7f7", "mtu: 8996", "excludeIps:\n  - 10.208.64.64..10.208.64.191", "kind: ProxmoxNetwork"} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n---\n"); n != 4 {
		t.Errorf("Vpc, NAD, Subnet, pool and ProxmoxNetwork are 5 documents, got %d separators", n)
	}

	out, err = vpcRun(t, "-o", "json", "render", "vpc", "-f", p("vpc.yaml"), "--lookup", p("lookup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string
		Items []struct{ Kind string }
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" || len(list.Items) != 5 {
		t.Errorf("-o json prints a List of 5: %v %+v", err, list)
	}

	_, err = vpcRun(t, "render", "vpc", "-f", p("vpc.yaml"))
	if err == nil || err.Error() != `subnet "private": no ProxmoxNetworkZone exists; ask the platform administrator to enable the proxmox-network package` {
		t.Errorf("without zones the render is refused with the exact message, got %v", err)
	}
	_, err = vpcRun(t, "render", "vpc", "-f", p("route.yaml"))
	if err == nil || err.Error() != "route to 10.208.128.0/24: next hop 10.70.0.12 is outside every subnet of this VPC" {
		t.Errorf("got %v", err)
	}
}

// TestRenderVPCExit checks what a wrong file reports.
func TestRenderVPCExit(t *testing.T) {
	dir := admissionFiles(t, map[string]string{"vpc.yaml": vpcSpec})
	_, err := vpcRun(t, "render", "vpc", "-f", filepath.Join(dir, "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("a missing file is a clear error: %v", err)
	}
	_, err = vpcRun(t, "render", "vpc", "-f", filepath.Join(dir, "vpc.yaml"), "--lookup", filepath.Join(dir, "vpc.yaml"))
	if err == nil || !strings.Contains(err.Error(), "neither ProxmoxNetworkZone nor ProxmoxNetwork") {
		t.Errorf("a lookup file of the wrong kind is refused: %v", err)
	}
}

// TestRenderVPCFromCluster runs `render vpc --from-cluster` against a real
// API server in three states, each refused with its own fix before the
// last renders: without the proxmox.cozystack.io CRDs (enable the
// package), with them but no zone (create one), and with a zone.
func TestRenderVPCFromCluster(t *testing.T) {
	s := kube.Scheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cfg, c := testenv.StartAPIServer(t, testenv.APIServerOptions{Scheme: s})
	kc := testenv.KubeconfigFile(t, cfg, "")
	dir := admissionFiles(t, map[string]string{"vpc.yaml": vpcSpec})
	args := []string{"render", "vpc", "-f", filepath.Join(dir, "vpc.yaml"), "--from-cluster", "--kubeconfig", kc}

	if _, err := vpcRun(t, args...); err == nil || err.Error() != vpcrender.APINotInstalled {
		t.Errorf("without the CRDs: %v", err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	want := `subnet "private": no ProxmoxNetworkZone exists; the proxmox.cozystack.io API is installed; ask the platform administrator to create a ProxmoxNetworkZone`
	if _, err := vpcRun(t, args...); err == nil || err.Error() != want {
		t.Errorf("with the CRDs and no zone: %v", err)
	}
	zone := &v1alpha1.ProxmoxNetworkZone{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.ProxmoxNetworkZoneSpec{Bridge: "vmbr70", ProviderNetwork: "pxtenant", VLANRanges: []string{"101-199"}, MTU: ptr.To[int32](8996)}}
	if err := c.Create(context.Background(), zone); err != nil {
		t.Fatal(err)
	}
	out, err := vpcRun(t, args...)
	if err != nil || !strings.Contains(out, "kind: ProxmoxNetwork\n") || !strings.Contains(out, "mtu: 8996") || !strings.Contains(out, "zone: default") {
		t.Errorf("with a zone the render reads it: %v\n%s", err, out)
	}
	if _, errOut, code := admissionRun(t, append(args, "--lookup", kc)...); code != 2 || !strings.Contains(errOut, "[from-cluster lookup] were all set") {
		t.Errorf("--lookup and --from-cluster together: exit %d, %q", code, errOut)
	}
}
