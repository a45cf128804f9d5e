package network

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, spelled as the Cozystack proxmox-network controller spells
// them so dashboards and alerts keep working.
const (
	MetricZoneVLANsTotal          = "cozy_proxmox_zone_vlans_total"
	MetricZoneVLANsAllocated      = "cozy_proxmox_zone_vlans_allocated"
	MetricZoneVLANsFree           = "cozy_proxmox_zone_vlans_free"
	MetricZoneNetworks            = "cozy_proxmox_zone_networks"
	MetricOrphanedVLANs           = "cozy_proxmox_orphaned_vlans"
	MetricNetworkReady            = "cozy_proxmox_network_ready"
	MetricNetworkIPPoolAddresses  = "cozy_proxmox_network_ippool_addresses"
	MetricNetworkConsumers        = "cozy_proxmox_network_consumers"
	MetricNetworkDeleting         = "cozy_proxmox_network_deleting"
	MetricNetworkGatewayChassis   = "cozy_proxmox_network_gateway_chassis"
	MetricNetworkGatewayReady     = "cozy_proxmox_network_gateway_ready"
	MetricVLANAllocations         = "cozy_proxmox_vlan_allocations_total"
	MetricNetworkReconcileErrors  = "cozy_proxmox_network_reconcile_errors_total"
	MetricNetworkReconcileSeconds = "cozy_proxmox_network_reconcile_duration_seconds"
	MetricGatewayGroupsCollected  = "cozy_proxmox_gateway_groups_collected_total"
	MetricGatewayNBErrors         = "cozy_proxmox_gateway_nb_errors_total"
)

// Values of the "result" label of cozy_proxmox_vlan_allocations_total.
const (
	AllocationAllocated = "allocated"
	AllocationExhausted = "exhausted"
	AllocationConflict  = "conflict"
)

// Metrics holds every cozy_proxmox_* series. Build it with NewMetrics and
// give it to the controller; the gateway adapter counts its collections and
// NB errors on it too.
type Metrics struct {
	zoneTotal, zoneAllocated, zoneFree, zoneNetworks, orphaned *prometheus.GaugeVec

	netReady, netPool, netConsumers, netDeleting, netChassis, netGatewayReady *prometheus.GaugeVec

	allocations     *prometheus.CounterVec
	reconcileErrors *prometheus.CounterVec
	duration        prometheus.Histogram
	// GroupsCollected counts OVN HA chassis groups deleted because their
	// network was gone.
	GroupsCollected prometheus.Counter
	// NBErrors counts gateway passes and releases that could not reach or
	// update the OVN NB.
	NBErrors prometheus.Counter

	// readyMu guards readyLabels: the zone and VLAN labels of each
	// network's cozy_proxmox_network_ready series, so a change or a
	// forget deletes that one series instead of scanning every network's.
	readyMu     sync.Mutex
	readyLabels map[networkID][2]string
}

// networkID is a network's namespace and name.
type networkID struct{ namespace, name string }

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// NewMetrics builds the metrics and registers them on reg; a nil reg keeps
// them unregistered. It never touches the global registry.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		readyLabels:     map[networkID][2]string{},
		zoneTotal:       gauge(MetricZoneVLANsTotal, "VLANs the zone may allocate (ranges minus reserved).", "zone"),
		zoneAllocated:   gauge(MetricZoneVLANsAllocated, "VLANs held by networks of the zone.", "zone"),
		zoneFree:        gauge(MetricZoneVLANsFree, "VLANs the zone can still hand out.", "zone"),
		zoneNetworks:    gauge(MetricZoneNetworks, "ProxmoxNetworks bound to the zone.", "zone"),
		orphaned:        gauge(MetricOrphanedVLANs, "Kube-OVN Vlans labelled for the zone whose ProxmoxNetwork no longer exists.", "zone"),
		netReady:        gauge(MetricNetworkReady, "1 when the ProxmoxNetwork is Ready.", "namespace", "network", "zone", "vlan"),
		netPool:         gauge(MetricNetworkIPPoolAddresses, "Addresses of the network's InClusterIPPool by state.", "namespace", "network", "state"),
		netConsumers:    gauge(MetricNetworkConsumers, "Addresses allocated to VMs on the network.", "namespace", "network"),
		netDeleting:     gauge(MetricNetworkDeleting, "1 while a deleted network waits before it is released.", "namespace", "network"),
		netChassis:      gauge(MetricNetworkGatewayChassis, "Chassis serving the network's router port, as last reported by the gateway.", "namespace", "network"),
		netGatewayReady: gauge(MetricNetworkGatewayReady, "1 when GatewayReady is True; absent while gateways are not managed.", "namespace", "network"),
		allocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricVLANAllocations, Help: "VLAN allocation attempts by result (allocated, exhausted, conflict).",
		}, []string{"zone", "result"}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricNetworkReconcileErrors, Help: "Network reconciles that ended in an error or a not-Ready condition, by reason.",
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: MetricNetworkReconcileSeconds, Help: "Duration of a ProxmoxNetwork reconcile.", Buckets: prometheus.DefBuckets,
		}),
		GroupsCollected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricGatewayGroupsCollected, Help: "OVN HA chassis groups deleted because their ProxmoxNetwork was gone.",
		}),
		NBErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricGatewayNBErrors, Help: "Gateway passes and releases that could not reach or update the OVN NB.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("cannot register the cozy_proxmox metrics (registered twice?): %w", err)
	}
	return m, nil
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.zoneTotal, m.zoneAllocated, m.zoneFree, m.zoneNetworks, m.orphaned,
		m.netReady, m.netPool, m.netConsumers, m.netDeleting, m.netChassis, m.netGatewayReady,
		m.allocations, m.reconcileErrors, m.duration, m.GroupsCollected, m.NBErrors,
	}
}

// zone records a zone's counts.
func (m *Metrics) zone(name string, total, allocated, free, networks, orphans int) {
	m.zoneTotal.WithLabelValues(name).Set(float64(total))
	m.zoneAllocated.WithLabelValues(name).Set(float64(allocated))
	m.zoneFree.WithLabelValues(name).Set(float64(free))
	m.zoneNetworks.WithLabelValues(name).Set(float64(networks))
	m.orphaned.WithLabelValues(name).Set(float64(orphans))
}

// forgetZone drops the series of a zone that no longer exists.
func (m *Metrics) forgetZone(name string) {
	for _, g := range []*prometheus.GaugeVec{m.zoneTotal, m.zoneAllocated, m.zoneFree, m.zoneNetworks, m.orphaned} {
		g.DeleteLabelValues(name)
	}
}

// networkSample is what the network gauges show for one network.
type networkSample struct {
	namespace, name, zone string
	vlan                  int32
	ready, deleting       bool
	pool                  *[3]int32 // total, used, free
	gateway               *bool     // nil while gateways are not managed
	chassis               int
}

func (m *Metrics) network(s networkSample) {
	m.setReady(s)
	m.netDeleting.WithLabelValues(s.namespace, s.name).Set(b2f(s.deleting))
	if s.pool != nil {
		for i, state := range []string{"total", "used", "free"} {
			m.netPool.WithLabelValues(s.namespace, s.name, state).Set(float64(s.pool[i]))
		}
		m.netConsumers.WithLabelValues(s.namespace, s.name).Set(float64(s.pool[1]))
	}
	if s.gateway == nil {
		m.netGatewayReady.DeleteLabelValues(s.namespace, s.name)
		m.netChassis.DeleteLabelValues(s.namespace, s.name)
		return
	}
	m.netGatewayReady.WithLabelValues(s.namespace, s.name).Set(b2f(*s.gateway))
	m.netChassis.WithLabelValues(s.namespace, s.name).Set(float64(s.chassis))
}

// setReady sets the network's ready series, deleting the one it had under
// another zone or VLAN.
func (m *Metrics) setReady(s networkSample) {
	id, labels := networkID{s.namespace, s.name}, [2]string{s.zone, strconv.Itoa(int(s.vlan))}
	m.readyMu.Lock()
	defer m.readyMu.Unlock()
	if old, ok := m.readyLabels[id]; ok && old != labels {
		m.netReady.DeleteLabelValues(s.namespace, s.name, old[0], old[1])
	}
	m.readyLabels[id] = labels
	m.netReady.WithLabelValues(s.namespace, s.name, labels[0], labels[1]).Set(b2f(s.ready))
}

// forgetNetwork drops every series of a network that is gone, each by its
// full label values: the cost does not grow with the number of networks.
func (m *Metrics) forgetNetwork(namespace, name string) {
	m.readyMu.Lock()
	if old, ok := m.readyLabels[networkID{namespace, name}]; ok {
		m.netReady.DeleteLabelValues(namespace, name, old[0], old[1])
		delete(m.readyLabels, networkID{namespace, name})
	}
	m.readyMu.Unlock()
	for _, state := range []string{"total", "used", "free"} {
		m.netPool.DeleteLabelValues(namespace, name, state)
	}
	for _, g := range []*prometheus.GaugeVec{m.netConsumers, m.netDeleting, m.netChassis, m.netGatewayReady} {
		g.DeleteLabelValues(namespace, name)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
