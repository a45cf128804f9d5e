package network_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// TestMetrics runs a zone to exhaustion and a held delete with the metrics
// on a private registry, and reads the series back by name and labels.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := network.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := network.NewMetrics(reg); err == nil {
		t.Error("registering the metrics twice on one registry must fail")
	}
	ctx := context.Background()
	h := sim.NewHarness(sim.Options{Metrics: m})
	c := h.Client()
	baseWorld(t, c, map[string][]string{"zone-a": {"100-101"}})
	for i := range 3 {
		createNetwork(t, c, netID(i), "zone-a")
	}
	mustCreate(t, c, sim.IPAddress(netID(0).ns(), "vm-0", netID(0).name(), "10.10.0.70", 24))
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Converge(ctx); err != nil {
		t.Fatal(err)
	}
	uninstall(t, c, 0)
	if _, err := h.Converge(ctx); err != nil {
		t.Fatal(err)
	}
	got := gather(t, reg)
	want := map[string]float64{
		`cozy_proxmox_zone_vlans_total{zone="zone-a"}`:                                            2,
		`cozy_proxmox_zone_vlans_allocated{zone="zone-a"}`:                                        2,
		`cozy_proxmox_zone_vlans_free{zone="zone-a"}`:                                             0,
		`cozy_proxmox_zone_networks{zone="zone-a"}`:                                               3,
		`cozy_proxmox_orphaned_vlans{zone="zone-a"}`:                                              0,
		`cozy_proxmox_network_ready{namespace="tenant-0",network="s-0",vlan="100",zone="zone-a"}`: 0,
		`cozy_proxmox_network_ready{namespace="tenant-1",network="s-1",vlan="101",zone="zone-a"}`: 1,
		`cozy_proxmox_network_ready{namespace="tenant-2",network="s-2",vlan="0",zone="zone-a"}`:   0,
		`cozy_proxmox_network_deleting{namespace="tenant-0",network="s-0"}`:                       1,
		`cozy_proxmox_network_ippool_addresses{namespace="tenant-0",network="s-0",state="used"}`:  1,
		`cozy_proxmox_network_ippool_addresses{namespace="tenant-0",network="s-0",state="total"}`: 128,
		`cozy_proxmox_network_ippool_addresses{namespace="tenant-0",network="s-0",state="free"}`:  127,
		`cozy_proxmox_network_consumers{namespace="tenant-0",network="s-0"}`:                      1,
		`cozy_proxmox_vlan_allocations_total{result="allocated",zone="zone-a"}`:                   2,
		`cozy_proxmox_gateway_groups_collected_total`:                                             0,
		`cozy_proxmox_gateway_nb_errors_total`:                                                    0,
		`cozy_proxmox_networks{reason="InUse",zone="zone-a"}`:                                     1,
		`cozy_proxmox_networks{reason="Ready",zone="zone-a"}`:                                     1,
		`cozy_proxmox_networks{reason="ZoneExhausted",zone="zone-a"}`:                             1,
	}
	for series, v := range want {
		if g, ok := got[series]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", series, g, ok, v)
		}
	}
	if got[`cozy_proxmox_vlan_allocations_total{result="exhausted",zone="zone-a"}`] < 1 {
		t.Error("the exhausted network must count an exhausted allocation")
	}
	for _, name := range []string{"cozy_proxmox_network_reconcile_errors_total", "cozy_proxmox_network_reconcile_duration_seconds"} {
		if !hasFamily(got, name) {
			t.Errorf("no %s series", name)
		}
	}
	// Released: the network's series go away.
	if err := c.Delete(ctx, sim.IPAddress(netID(0).ns(), "vm-0", netID(0).name(), "10.10.0.70", 24)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Converge(ctx); err != nil {
		t.Fatal(err)
	}
	var left []string
	after := gather(t, reg)
	if v, ok := after[`cozy_proxmox_networks{reason="InUse",zone="zone-a"}`]; ok {
		t.Errorf("the released network is still counted as InUse (%v)", v)
	}
	for series := range after {
		if strings.Contains(series, `network="s-0"`) {
			left = append(left, series)
		}
	}
	sort.Strings(left)
	if diff := cmp.Diff([]string(nil), left); diff != "" {
		t.Errorf("series of the released network: -want +got:\n%s", diff)
	}
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			out[key] = value(f.GetType(), m)
		}
	}
	return out
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

func hasFamily(series map[string]float64, name string) bool {
	for k := range series {
		if k == name || strings.HasPrefix(k, name+"{") {
			return true
		}
	}
	return false
}
