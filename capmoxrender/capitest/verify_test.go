package capitest_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/pxsubstrate/pxsubstrate/internal/cli"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// checkVerify runs `pxsubstrate verify` against the pool's real state. The
// tenant is the same API server, which holds no Node. Every Machine Cluster
// API made is a MachineNoProviderID row in CAPI's phase Pending, since
// capmox never provisions its VM; before the rows, verify reports what this
// management cluster lacks: no IPAM provider (IPAMProviderMissing), no host
// entry in each Machine's TalosConfig (NoHostEntry: no Job runs here to
// write it), and the CCM and CSI Deployments not ready (ControllerNotReady:
// no Deployment controller runs here). It exits 1.
func checkVerify(t *testing.T, cfg *rest.Config, ns, cluster string, machines []string) {
	t.Helper()
	kc := testenv.KubeconfigFile(t, cfg, "")
	var out, errOut bytes.Buffer
	code := cli.Main([]string{"verify", "--kubeconfig", kc, "--tenant-kubeconfig", kc, "-n", ns, "--cluster", cluster,
		"--capi-version", "v1beta2", "-o", "json"}, strings.NewReader(""), &out, &errOut)
	if code != 1 {
		t.Errorf("verify exited %d, want 1; stderr:\n%s", code, errOut.String())
	}
	var rows []struct {
		Node, Machine, State string
		OK                   bool
		Codes                []string
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("verify -o json: %v\n%s", err, out.String())
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Machine)
		if r.OK || r.Node != "-" || r.State != "Pending" || !slices.Equal(r.Codes, []string{"MachineNoProviderID"}) {
			t.Errorf("verify row %+v: want Machine %s without a Node, Pending, failing with MachineNoProviderID alone", r, r.Machine)
		}
	}
	slices.Sort(got)
	slices.Sort(machines)
	if !slices.Equal(got, machines) {
		t.Errorf("verify rows for Machines %v, want %v", got, machines)
	}
	want := []string{"IPAMProviderMissing:", "ControllerNotReady: the cloud-controller-manager Deployment",
		"ControllerNotReady: the CSI controller Deployment"}
	for _, m := range machines {
		want = append(want, "NoHostEntry: Machine "+m+":")
	}
	for _, w := range want {
		if !strings.Contains(errOut.String(), w) {
			t.Errorf("verify's findings lack %q:\n%s", w, errOut.String())
		}
	}
}
