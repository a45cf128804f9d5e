package sim_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// lockedBuffer is a bytes.Buffer safe for the progress goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProgressAndSummary: a converge that outlasts the progress interval
// prints progress lines and a last one with every network Ready and the
// controller's writes; the report's summary counts the networks by state,
// the zone's VLANs, the reconciles and the writes.
func TestProgressAndSummary(t *testing.T) {
	defer sim.SetProgressEvery(time.Millisecond)()
	var lines []string
	lines = append(lines, "steps:", "- apply:", "    objects: |")
	obj := func(s string) { lines = append(lines, "      "+s) }
	obj("apiVersion: v1\n      kind: Namespace\n      metadata: {name: tenant-p}\n      ---")
	obj("apiVersion: kubeovn.io/v1\n      kind: ProviderNetwork\n      metadata: {name: px-p}\n      spec: {defaultInterface: ens19}\n      status: {ready: true, readyNodes: [n1]}\n      ---")
	obj("apiVersion: proxmox.cozystack.io/v1alpha1\n      kind: ProxmoxNetworkZone\n      metadata: {name: zone-p}\n      spec: {bridge: vmbr1, providerNetwork: px-p, vlanRanges: [\"1-4094\"]}")
	for i := range 30 {
		obj(fmt.Sprintf("---\n      apiVersion: kubeovn.io/v1\n      kind: Subnet\n      metadata: {name: p-%d, labels: {cozystack.io/tenantName: tenant-p}}\n      spec: {cidrBlock: 10.50.%d.0/24, gateway: 10.50.%d.1, vlan: p-%d, excludeIps: [10.50.%d.64..10.50.%d.191]}", i, i, i, i, i, i))
		obj(fmt.Sprintf("---\n      apiVersion: ipam.cluster.x-k8s.io/v1alpha2\n      kind: InClusterIPPool\n      metadata: {namespace: tenant-p, name: p-%d}\n      spec: {addresses: [10.50.%d.64-10.50.%d.191], prefix: 24, gateway: 10.50.%d.1}", i, i, i, i))
		obj(fmt.Sprintf("---\n      apiVersion: proxmox.cozystack.io/v1alpha1\n      kind: ProxmoxNetwork\n      metadata: {namespace: tenant-p, name: p-%d}\n      spec: {zone: zone-p, subnet: p-%d, ipPool: p-%d}", i, i, i))
	}
	lines = append(lines, "- converge: true")
	s, err := sim.ParseScenario([]byte(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	progress := &lockedBuffer{}
	rep, err := sim.RunWith(context.Background(), s, ".", sim.Options{Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	out := progress.String()
	if !regexp.MustCompile(`(?m)^sim: converging, [0-9.]+ s: [0-9]+ of [0-9]+ networks Ready, [0-9]+ controller writes$`).MatchString(out) {
		t.Errorf("no progress line while converging:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^sim: converged in [0-9.]+ s: 30 of 30 networks Ready, [1-9][0-9]* controller writes\n\z`).MatchString(out) {
		t.Errorf("the last progress line does not report 30 of 30 networks Ready:\n%s", out)
	}
	sum := rep.Summary
	if sum.Networks["Ready"] != 30 || len(sum.Networks) != 1 {
		t.Errorf("networks by state: %v, want 30 Ready", sum.Networks)
	}
	if len(sum.Zones) != 1 || sum.Zones[0] != (sim.ZoneSummary{Name: "zone-p", Networks: 30, Allocated: 30, Free: 4064, Total: 4094}) {
		t.Errorf("zones: %+v", sum.Zones)
	}
	if sum.Reconciles == 0 || sum.Writes < 30*5 {
		t.Errorf("reconciles %d, writes %d; want some, and at least the 5 writes of each of 30 networks", sum.Reconciles, sum.Writes)
	}
	var table bytes.Buffer
	sim.WriteSummary(&table, sum)
	if !strings.Contains(table.String(), "30\tReady\n") || !strings.Contains(table.String(), "zone-p\t30\t30\t4064\t4094\n") {
		t.Errorf("summary table:\n%s", table.String())
	}
}
