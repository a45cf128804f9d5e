package layering_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/pxsubstrate/pxsubstrate"

// nonStandard lists the packages outside the standard library that pkgs
// import, directly or not, themselves included.
func nonStandard(t *testing.T, pkgs ...string) []string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), stderr(err))
	}
	return strings.Fields(string(out))
}

func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return err.Error() + ": " + string(ee.Stderr)
	}
	return err.Error()
}

// TestVlanallocStandardLibraryOnly: an embedder of vlanalloc or its test kit
// gets no package from outside the standard library, and nothing else of
// this module.
func TestVlanallocStandardLibraryOnly(t *testing.T) {
	allowed := []string{module + "/vlanalloc", module + "/vlanalloc/vlanalloctest"}
	for _, p := range nonStandard(t, allowed...) {
		if !slices.Contains(allowed, p) {
			t.Errorf("vlanalloc must import only the standard library, but it pulls in %s", p)
		}
	}
}

// TestOvngatewayLibovsdbOnly: ovngateway pulls in no Kubernetes package,
// no package of this module but its own OVN model (nbdb), and no
// third-party package that libovsdb does not pull in itself.
func TestOvngatewayLibovsdbOnly(t *testing.T) {
	ours := []string{module + "/ovngateway", module + "/ovngateway/nbdb"}
	libovsdb := nonStandard(t, "github.com/ovn-kubernetes/libovsdb/...")
	for _, p := range nonStandard(t, module+"/ovngateway") {
		switch {
		case strings.HasPrefix(p, "k8s.io/"), strings.HasPrefix(p, "sigs.k8s.io/"):
			t.Errorf("ovngateway must not import Kubernetes packages, but it pulls in %s (Kubernetes helpers belong in ovngateway/kubegateway)", p)
		case p == module || strings.HasPrefix(p, module+"/"):
			if !slices.Contains(ours, p) {
				t.Errorf("ovngateway must not import %s", p)
			}
		case !slices.Contains(libovsdb, p):
			t.Errorf("ovngateway pulls in %s, which libovsdb does not import", p)
		}
	}
}

// TestOvngatewayKitNoKubernetes: the NB test kit an embedder tests with
// pulls in no Kubernetes package either.
func TestOvngatewayKitNoKubernetes(t *testing.T) {
	for _, p := range nonStandard(t, module+"/ovngateway/ovngatewaytest") {
		if strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") {
			t.Errorf("ovngateway/ovngatewaytest must not import Kubernetes packages, but it pulls in %s", p)
		}
	}
}

// TestVNetNamesStandardLibraryOnly: the VNet naming rule admission shares
// with pvesdn pulls in nothing outside the standard library, so admission
// (the webhook and the policies' generator) never imports the Proxmox
// client.
func TestVNetNamesStandardLibraryOnly(t *testing.T) {
	for _, p := range nonStandard(t, module+"/pvesdn/vnetid") {
		if p != module+"/pvesdn/vnetid" {
			t.Errorf("pvesdn/vnetid must import only the standard library, but it pulls in %s", p)
		}
	}
	for _, p := range nonStandard(t, module+"/admission") {
		if strings.HasPrefix(p, "github.com/luthermonson/go-proxmox") || p == module+"/pvesdn" {
			t.Errorf("admission must not import the Proxmox client, but it pulls in %s", p)
		}
	}
}

// TestTestprocStandardLibraryOnly: the process supervisor the public test
// kits start their servers with (ovngatewaytest's ovsdb-server) pulls in
// nothing outside the standard library, so those kits gain no dependency
// through it.
func TestTestprocStandardLibraryOnly(t *testing.T) {
	for _, p := range nonStandard(t, module+"/testproc") {
		if p != module+"/testproc" {
			t.Errorf("testproc must import only the standard library, but it pulls in %s", p)
		}
	}
}

// TestShippedCodeStartsNoTestEnvironment: the two binaries (and with them
// the CLI, the controller and the simulation they ship) pull in no test
// environment (internal/testenv: real processes, test certificates) and
// no program behind hack/; the in-memory fakes (internal/fake) may ship,
// as the simulation and the demo run on them.
func TestShippedCodeStartsNoTestEnvironment(t *testing.T) {
	for _, p := range nonStandard(t, module+"/cmd/...") {
		if strings.HasPrefix(p, module+"/internal/testenv") || strings.HasPrefix(p, module+"/hack/") {
			t.Errorf("the binaries must not ship %s: test environments and hack/ programs are for tests and the lab", p)
		}
	}
}

// TestNICRulesStandardLibraryOnly: the bridge and VLAN rules that render
// and admission share (api/capmox) pull in nothing outside the standard
// library, so admission gains no dependency through them.
func TestNICRulesStandardLibraryOnly(t *testing.T) {
	for _, p := range nonStandard(t, module+"/api/capmox") {
		if p != module+"/api/capmox" {
			t.Errorf("api/capmox must import only the standard library, but it pulls in %s", p)
		}
	}
}

// TestPoolhealStandardLibraryOnly: the healing decisions are pure, over
// plain values; the controller and verify gather what they read.
func TestPoolhealStandardLibraryOnly(t *testing.T) {
	for _, p := range nonStandard(t, module+"/poolheal") {
		if p != module+"/poolheal" {
			t.Errorf("poolheal must import only the standard library, but it pulls in %s", p)
		}
	}
}

// TestFailuredomainsStandardLibraryOnly: the spreading decisions are pure,
// over plain values; the controller gathers what it reads.
func TestFailuredomainsStandardLibraryOnly(t *testing.T) {
	for _, p := range nonStandard(t, module+"/failuredomains") {
		if p != module+"/failuredomains" {
			t.Errorf("failuredomains must import only the standard library, but it pulls in %s", p)
		}
	}
}

// TestVerifyImportsNoRenderer: verify and its credential lint read back
// what the renderer writes through the names both take from api/capmox,
// and pull in neither the renderer nor the wiring under internal/.
func TestVerifyImportsNoRenderer(t *testing.T) {
	for _, p := range nonStandard(t, module+"/verify/...") {
		if strings.HasPrefix(p, module+"/capmoxrender") || strings.HasPrefix(p, module+"/internal/") {
			t.Errorf("verify must not import %s: the names it shares with the renderer live in api/capmox", p)
		}
	}
}
