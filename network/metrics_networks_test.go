package network

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// gaugeVecs is the earlier implementation of the per-network series, one
// GaugeVec per series, whose children live between scrapes; the count per
// zone and Ready reason is kept up to date on every sample. It is the model the
// collector must agree with, and the baseline of BenchmarkNetworkGauges.
type gaugeVecs struct {
	ready, pool, consumers, deleting, chassis, gatewayReady, failover, primary, networks *prometheus.GaugeVec
	readyLabels                                                                          map[networkID][2]string
	primaries                                                                            map[networkID]string
	// zoneReasons is each network's zone and Ready reason; counts is how
	// many networks hold each pair, kept in networks.
	zoneReasons map[networkID][2]string
	counts      map[[2]string]int
}

func newGaugeVecs() *gaugeVecs {
	return &gaugeVecs{
		ready:        gauge(MetricNetworkReady, "h", "namespace", "network", "zone", "vlan"),
		pool:         gauge(MetricNetworkIPPoolAddresses, "h", "namespace", "network", "state"),
		consumers:    gauge(MetricNetworkConsumers, "h", "namespace", "network"),
		deleting:     gauge(MetricNetworkDeleting, "h", "namespace", "network"),
		chassis:      gauge(MetricNetworkGatewayChassis, "h", "namespace", "network"),
		gatewayReady: gauge(MetricNetworkGatewayReady, "h", "namespace", "network"),
		failover:     gauge(MetricNetworkGatewayFailover, "h", "namespace", "network"),
		primary:      gauge(MetricNetworkGatewayPrimary, "h", "namespace", "network", "chassis"),
		networks:     gauge(MetricNetworks, "h", "zone", "reason"),
		readyLabels:  map[networkID][2]string{},
		primaries:    map[networkID]string{},
		zoneReasons:  map[networkID][2]string{},
		counts:       map[[2]string]int{},
	}
}

func (g *gaugeVecs) collectors() []prometheus.Collector {
	return []prometheus.Collector{g.ready, g.pool, g.consumers, g.deleting, g.chassis, g.gatewayReady, g.failover, g.primary, g.networks}
}

// count moves network id to the zone and reason of pair (none when pair
// is nil) in the networks gauge.
func (g *gaugeVecs) count(id networkID, pair *[2]string) {
	if old, ok := g.zoneReasons[id]; ok {
		delete(g.zoneReasons, id)
		if g.counts[old]--; g.counts[old] == 0 {
			delete(g.counts, old)
			g.networks.DeleteLabelValues(old[0], old[1])
		} else {
			g.networks.WithLabelValues(old[0], old[1]).Set(float64(g.counts[old]))
		}
	}
	if pair != nil {
		g.zoneReasons[id] = *pair
		g.counts[*pair]++
		g.networks.WithLabelValues(pair[0], pair[1]).Set(float64(g.counts[*pair]))
	}
}

// setPrimary keeps one primary chassis series for id, none when chassis is "".
func (g *gaugeVecs) setPrimary(id networkID, chassis string) {
	if old, ok := g.primaries[id]; ok {
		g.primary.DeleteLabelValues(id.namespace, id.name, old)
		delete(g.primaries, id)
	}
	if chassis != "" {
		g.primaries[id] = chassis
		g.primary.WithLabelValues(id.namespace, id.name, chassis).Set(1)
	}
}

func (g *gaugeVecs) record(s networkSample) {
	id, labels := networkID{s.namespace, s.name}, [2]string{s.zone, strconv.Itoa(int(s.vlan))}
	if old, ok := g.readyLabels[id]; ok && old != labels {
		g.ready.DeleteLabelValues(s.namespace, s.name, old[0], old[1])
	}
	g.readyLabels[id] = labels
	g.count(id, &[2]string{s.zone, s.readyReason})
	g.ready.WithLabelValues(s.namespace, s.name, labels[0], labels[1]).Set(b2f(s.ready))
	g.deleting.WithLabelValues(s.namespace, s.name).Set(b2f(s.deleting))
	if s.pool != nil {
		for i, state := range []string{"total", "used", "free"} {
			g.pool.WithLabelValues(s.namespace, s.name, state).Set(float64(s.pool[i]))
		}
		g.consumers.WithLabelValues(s.namespace, s.name).Set(float64(s.pool[1]))
	}
	if s.gateway == nil {
		g.gatewayReady.DeleteLabelValues(s.namespace, s.name)
		g.chassis.DeleteLabelValues(s.namespace, s.name)
		g.failover.DeleteLabelValues(s.namespace, s.name)
		g.setPrimary(id, "")
		return
	}
	g.setPrimary(id, s.primary)
	g.gatewayReady.WithLabelValues(s.namespace, s.name).Set(b2f(*s.gateway))
	g.chassis.WithLabelValues(s.namespace, s.name).Set(float64(s.chassis))
	g.failover.WithLabelValues(s.namespace, s.name).Set(b2f(*s.gateway && s.chassis >= MinFailoverChassis))
}

func (g *gaugeVecs) forget(id networkID) {
	if old, ok := g.readyLabels[id]; ok {
		g.ready.DeleteLabelValues(id.namespace, id.name, old[0], old[1])
		delete(g.readyLabels, id)
	}
	g.count(id, nil)
	g.setPrimary(id, "")
	for _, state := range []string{"total", "used", "free"} {
		g.pool.DeleteLabelValues(id.namespace, id.name, state)
	}
	for _, v := range []*prometheus.GaugeVec{g.consumers, g.deleting, g.chassis, g.gatewayReady, g.failover} {
		v.DeleteLabelValues(id.namespace, id.name)
	}
}

// series gathers reg into "name{label=value,...} value" lines, sorted.
func series(t interface{ Fatalf(string, ...any) }, reg *prometheus.Registry) []string {
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var out []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			out = append(out, fmt.Sprintf("%s{%s} %v", f.GetName(), labelString(m.GetLabel()), m.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return out
}

func labelString(pairs []*dto.LabelPair) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p.GetName() + "=" + p.GetValue()
	}
	return strings.Join(parts, ",")
}

// TestNetworkGaugesAgreeWithGaugeVecs records random samples and forgets
// random networks on the collector and on the GaugeVecs, and after every
// step compares what a scrape of each returns, series by series.
func TestNetworkGaugesAgreeWithGaugeVecs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ours, model := newNetworkGauges(), newGaugeVecs()
		regOurs, regModel := prometheus.NewPedanticRegistry(), prometheus.NewPedanticRegistry()
		regOurs.MustRegister(ours)
		regModel.MustRegister(model.collectors()...)
		network := rapid.SampledFrom([]networkID{{"a", "n1"}, {"a", "n2"}, {"b", "n1"}})
		t.Repeat(map[string]func(*rapid.T){
			"record": func(t *rapid.T) {
				id := network.Draw(t, "network")
				s := networkSample{
					namespace: id.namespace, name: id.name,
					zone:  rapid.SampledFrom([]string{"z1", "z2"}).Draw(t, "zone"),
					vlan:  rapid.Int32Range(0, 3).Draw(t, "vlan"),
					ready: rapid.Bool().Draw(t, "ready"), deleting: rapid.Bool().Draw(t, "deleting"),
					readyReason: rapid.SampledFrom([]string{ReasonReady, v1alpha1.ReasonZoneExhausted, NoReadyCondition}).Draw(t, "readyReason"),
					chassis:     rapid.IntRange(0, 3).Draw(t, "chassis"),
					primary:     rapid.SampledFrom([]string{"", "ch-1", "ch-2"}).Draw(t, "primary"),
				}
				if rapid.Bool().Draw(t, "hasPool") {
					s.pool = &[3]int32{rapid.Int32Range(0, 9).Draw(t, "total"), rapid.Int32Range(0, 9).Draw(t, "used"), rapid.Int32Range(0, 9).Draw(t, "free")}
				}
				if rapid.Bool().Draw(t, "managed") {
					up := rapid.Bool().Draw(t, "gatewayUp")
					s.gateway = &up
				}
				ours.record(s)
				model.record(s)
			},
			"forget": func(t *rapid.T) {
				id := network.Draw(t, "network")
				ours.forget(id)
				model.forget(id)
			},
			"": func(t *rapid.T) {
				got, want := series(t, regOurs), series(t, regModel)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("scrape differs:\ncollector:\n%s\ngauge vectors:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			},
		})
	})
}

// BenchmarkNetworkGauges records one sample for each of 10,000 networks (a
// pool, a managed gateway) on the collector and, in the same run, on the
// GaugeVecs it replaced, and reports the heap each keeps between
// scrapes and the ratio.
func BenchmarkNetworkGauges(b *testing.B) {
	const n = 10_000
	samples := make([]networkSample, n)
	up := true
	for i := range samples {
		samples[i] = networkSample{
			namespace: fmt.Sprintf("tenant-%d", i%4), name: fmt.Sprintf("s-%d", i), zone: "zone-a",
			vlan: int32(i%4094 + 1), ready: true, readyReason: ReasonReady, pool: &[3]int32{128, 3, 125},
			gateway: &up, chassis: 2, primary: fmt.Sprintf("ch-%d", i%3),
		}
	}
	retained := func(fill func() any) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		keep := fill()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return after.HeapAlloc - before.HeapAlloc
	}
	for b.Loop() {
		ours := retained(func() any {
			g := newNetworkGauges()
			for _, s := range samples {
				g.record(s)
			}
			return g
		})
		vecs := retained(func() any {
			g := newGaugeVecs()
			for _, s := range samples {
				g.record(s)
			}
			return g
		})
		b.ReportMetric(float64(ours)/(1<<20), "collector-MiB")
		b.ReportMetric(float64(vecs)/(1<<20), "gaugevecs-MiB")
		b.ReportMetric(float64(vecs)/float64(max(ours, 1)), "gaugevecs/collector")
	}
}
