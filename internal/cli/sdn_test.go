package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

const sdnZoneYAML = `apiVersion: proxmox.cozystack.io/v1alpha1
kind: ProxmoxNetworkZone
metadata:
  name: zone-a
spec:
  bridge: vmbr0
  providerNetwork: pn-a
  vlanRanges: ["100-103"]
  reservedVLANs: [103]
  mtu: 9000
  sdn:
    mode: VNets
    zone: pxa
`

// sdnEnv is a TLS fake with two nodes and the zone file.
func sdnEnv(t *testing.T, zoneYAML string) (*liveEnv, []string) {
	t.Helper()
	e := newLiveEnv(t)
	zone := filepath.Join(e.dir, "zone.yaml")
	if err := os.WriteFile(zone, []byte(zoneYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return e, []string{"--zone", zone, "--url", e.bare, "--token-id", e.srv.RootTokenID, "--token-secret-file", e.rootSec,
		"--ca-file", e.ca}
}

func TestSDNCheckCommand(t *testing.T) {
	e, args := sdnEnv(t, sdnZoneYAML)
	out, _, code := runIn(t, "", append([]string{"sdn", "check"}, args...)...)
	if code != 1 || !strings.Contains(out, "BridgeNotVLANAware") || !strings.Contains(out, "carryable VLANs: none") {
		t.Fatalf("check of the installer's vmbr0: exit %d\n%s", code, out)
	}
	if err := e.srv.SetInterface("pve", pvefake.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1", VLANAware: true,
		VIDs: "2-4094", MTU: 9000}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runIn(t, "", append([]string{"sdn", "check"}, args...)...)
	if code != 0 || !strings.Contains(out, "carryable VLANs: 100-102") {
		t.Fatalf("check of a VLAN-aware vmbr0: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = runIn(t, "", "sdn", "check", "--zone", filepath.Join(e.dir, "missing.yaml"), "--url", e.bare)
	if code == 0 || !strings.Contains(errOut, "missing.yaml") {
		t.Fatalf("a missing zone file: exit %d %s", code, errOut)
	}
	_, badArgs := sdnEnv(t, strings.Replace(sdnZoneYAML, "mode: VNets", "mode: Vnets", 1))
	_, errOut, code = runIn(t, "", append([]string{"sdn", "check"}, badArgs...)...)
	if code == 0 || !strings.Contains(errOut, `spec.sdn.mode "Vnets" is neither Check nor VNets`) {
		t.Fatalf("a misspelt mode: exit %d %s", code, errOut)
	}
}

func TestSDNPlanApplyAuditCommands(t *testing.T) {
	e, args := sdnEnv(t, sdnZoneYAML)
	if err := e.srv.SetInterface("pve", pvefake.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1", VLANAware: true,
		VIDs: "2-4094", MTU: 9000}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runIn(t, "", append([]string{"sdn", "plan"}, args...)...)
	if code != 0 || !strings.Contains(out, "vnet    pxa0102  zone=pxa tag=102") || !strings.Contains(out, "3 VNet(s) to create, 0 present") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runIn(t, "", append([]string{"sdn", "audit"}, args...)...)
	if code != 1 || !strings.Contains(out, "ZoneMissing") || !strings.Contains(out, "VNetMissing  pxa0100") {
		t.Fatalf("audit before the apply: exit %d\n%s%s", code, out, errOut)
	}
	e.srv.FailNodeReload("pve", "command 'ifreload -a' failed: exit code 1")
	out, errOut, code = runIn(t, "", append([]string{"sdn", "apply"}, args...)...)
	if code != 1 || !strings.Contains(out, "pve   command 'ifreload -a' failed") || !strings.Contains(errOut, "Warning: PVE 9.1 has no SDN lock") {
		t.Fatalf("apply with a failing node: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runIn(t, "", append([]string{"sdn", "audit"}, args...)...)
	if code != 1 || !strings.Contains(out, "NodeZoneError  -     pve") ||
		!strings.Contains(out, "finding: SDN zone pxa is in error on node pve: pxa0100: error pxa0100; pxa0101: error pxa0101") {
		t.Fatalf("audit after the failed reload: exit %d\n%s%s", code, out, errOut)
	}
	e.srv.FailNodeReload("pve", "")
	out, errOut, code = runIn(t, "", append([]string{"sdn", "apply"}, args...)...)
	if code != 0 || !strings.Contains(out, "pve   error   OK") ||
		!strings.Contains(out, "nothing to create; SDN zone pxa was not available on 1 node(s)\napplied once plainly") {
		t.Fatalf("second apply: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runIn(t, "", append([]string{"sdn", "audit"}, args...)...)
	if code != 0 || !strings.Contains(out, "0 difference(s)") {
		t.Fatalf("audit after the apply: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runIn(t, "", append([]string{"sdn", "apply"}, args...)...)
	if code != 0 || !strings.Contains(out, "nothing to apply: 3 VNet(s) present") {
		t.Fatalf("apply with every node available: exit %d\n%s%s", code, out, errOut)
	}
	_, checkArgs := sdnEnv(t, strings.Replace(sdnZoneYAML, "mode: VNets", "mode: Check", 1))
	_, errOut, code = runIn(t, "", append([]string{"sdn", "plan"}, checkArgs...)...)
	if code == 0 || !strings.Contains(errOut, "spec.sdn.mode must be VNets") {
		t.Fatalf("plan of a Check zone: exit %d %s", code, errOut)
	}
}
