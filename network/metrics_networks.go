package network

import (
	"strconv"
	"sync"
	"unique"

	"github.com/prometheus/client_golang/prometheus"
)

// networkGauges serves the per-network series (ready, pool addresses,
// consumers, deleting, gateway chassis, readiness, failover and primary
// chassis) and the count of networks per zone and Ready reason. It keeps one small
// record per network and builds the series when the registry is scraped,
// as kube-state-metrics does, instead of holding gauge children with
// their label pairs per network between scrapes: at 10,000 networks those
// children were a quarter of the controller's heap.
type networkGauges struct {
	ready, pool, consumers, deleting, chassis, gatewayReady, failover, primary *prometheus.Desc
	// networks is cozy_proxmox_networks, counted from the records at
	// scrape time.
	networks *prometheus.Desc

	mu      sync.Mutex
	records map[networkID]networkRecord
}

// networkRecord is the last sample of one network. The Ready reason and
// the primary chassis are interned: thousands of networks share a few of
// each, and a handle costs a pointer where a string costs two words.
type networkRecord struct {
	zone    string
	reason  unique.Handle[string]
	primary unique.Handle[string] // meaningful when hasPrimary
	vlan    int32
	pool    [3]int32 // total, used, free; meaningful when hasPool
	chassis int32
	flags   recordFlags
}

type recordFlags uint8

const (
	flagReady recordFlags = 1 << iota
	flagDeleting
	flagHasPool
	flagGateway // gateways are managed: the gateway series exist
	flagGatewayReady
	flagHasPrimary
)

func newNetworkGauges() *networkGauges {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append([]string{"namespace", "network"}, labels...), nil)
	}
	return &networkGauges{
		ready:        desc(MetricNetworkReady, "1 when the ProxmoxNetwork is Ready.", "zone", "vlan"),
		pool:         desc(MetricNetworkIPPoolAddresses, "Addresses of the network's InClusterIPPool by state.", "state"),
		consumers:    desc(MetricNetworkConsumers, "Addresses allocated to VMs on the network."),
		deleting:     desc(MetricNetworkDeleting, "1 while a deleted network waits before it is released."),
		chassis:      desc(MetricNetworkGatewayChassis, "Chassis serving the network's router port, as last reported by the gateway."),
		gatewayReady: desc(MetricNetworkGatewayReady, "1 when GatewayReady is True; absent while gateways are not managed."),
		failover: desc(MetricNetworkGatewayFailover,
			"1 when the network's gateway group can fail over by itself (GatewayReady True with at least MinFailoverChassis chassis); absent while gateways are not managed."),
		primary: desc(MetricNetworkGatewayPrimary,
			"1 for the highest-priority chassis of the network's gateway group, the one OVN makes active while it keeps a BFD session up; absent while the group is not assigned.",
			"chassis"),
		networks: prometheus.NewDesc(MetricNetworks,
			"ProxmoxNetworks by zone and by the reason of their Ready condition.", []string{"zone", "reason"}, nil),
		records: map[networkID]networkRecord{},
	}
}

// record stores s. A sample without pool counts keeps the counts last
// reported, as a gauge that is not set keeps its value.
func (g *networkGauges) record(s networkSample) {
	id := networkID{s.namespace, s.name}
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.records[id]
	r := networkRecord{zone: s.zone, reason: unique.Make(s.readyReason), vlan: s.vlan, chassis: int32(min(s.chassis, 1<<30))}
	if s.ready {
		r.flags |= flagReady
	}
	if s.deleting {
		r.flags |= flagDeleting
	}
	switch {
	case s.pool != nil:
		r.pool, r.flags = *s.pool, r.flags|flagHasPool
	case old.flags&flagHasPool != 0:
		r.pool, r.flags = old.pool, r.flags|flagHasPool
	}
	if s.gateway != nil {
		r.flags |= flagGateway
		if *s.gateway {
			r.flags |= flagGatewayReady
		}
		if s.primary != "" {
			r.primary, r.flags = unique.Make(s.primary), r.flags|flagHasPrimary
		}
	}
	g.records[id] = r
}

func (g *networkGauges) forget(id networkID) {
	g.mu.Lock()
	delete(g.records, id)
	g.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (g *networkGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.ready, g.pool, g.consumers, g.deleting, g.chassis, g.gatewayReady, g.failover, g.primary, g.networks} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It copies the records under the
// lock and builds the series outside it, so a scrape does not hold up the
// reconciles that record samples.
func (g *networkGauges) Collect(ch chan<- prometheus.Metric) {
	type entry struct {
		id networkID
		r  networkRecord
	}
	g.mu.Lock()
	entries := make([]entry, 0, len(g.records))
	for id, r := range g.records {
		entries = append(entries, entry{id, r})
	}
	g.mu.Unlock()
	gaugeOf := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	type zoneReason struct {
		zone   string
		reason unique.Handle[string]
	}
	counts := map[zoneReason]int{}
	for _, e := range entries {
		ns, name, r := e.id.namespace, e.id.name, e.r
		counts[zoneReason{r.zone, r.reason}]++
		gaugeOf(g.ready, b2f(r.flags&flagReady != 0), ns, name, r.zone, strconv.Itoa(int(r.vlan)))
		gaugeOf(g.deleting, b2f(r.flags&flagDeleting != 0), ns, name)
		if r.flags&flagHasPool != 0 {
			for i, state := range []string{"total", "used", "free"} {
				gaugeOf(g.pool, float64(r.pool[i]), ns, name, state)
			}
			gaugeOf(g.consumers, float64(r.pool[1]), ns, name)
		}
		if r.flags&flagGateway != 0 {
			gaugeOf(g.gatewayReady, b2f(r.flags&flagGatewayReady != 0), ns, name)
			gaugeOf(g.chassis, float64(r.chassis), ns, name)
			gaugeOf(g.failover, b2f(r.flags&flagGatewayReady != 0 && r.chassis >= MinFailoverChassis), ns, name)
			if r.flags&flagHasPrimary != 0 {
				gaugeOf(g.primary, 1, ns, name, r.primary.Value())
			}
		}
	}
	for k, n := range counts {
		gaugeOf(g.networks, float64(n), k.zone, k.reason.Value())
	}
}
