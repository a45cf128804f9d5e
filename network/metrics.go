package network

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, spelled as the Cozystack proxmox-network controller spells
// them so dashboards and alerts keep working.
const (
	MetricZoneVLANsTotal          = "cozy_proxmox_zone_vlans_total"
	MetricZoneVLANsAllocated      = "cozy_proxmox_zone_vlans_allocated"
	MetricZoneVLANsFree           = "cozy_proxmox_zone_vlans_free"
	MetricZoneNetworks            = "cozy_proxmox_zone_networks"
	MetricNetworks                = "cozy_proxmox_networks"
	MetricOrphanedVLANs           = "cozy_proxmox_orphaned_vlans"
	MetricNetworkReady            = "cozy_proxmox_network_ready"
	MetricNetworkIPPoolAddresses  = "cozy_proxmox_network_ippool_addresses"
	MetricNetworkConsumers        = "cozy_proxmox_network_consumers"
	MetricNetworkDeleting         = "cozy_proxmox_network_deleting"
	MetricNetworkGatewayChassis   = "cozy_proxmox_network_gateway_chassis"
	MetricNetworkGatewayReady     = "cozy_proxmox_network_gateway_ready"
	MetricNetworkGatewayFailover  = "cozy_proxmox_network_gateway_failover"
	MetricNetworkGatewayPrimary   = "cozy_proxmox_network_gateway_primary_chassis"
	MetricVLANAllocations         = "cozy_proxmox_vlan_allocations_total"
	MetricNetworkReconcileErrors  = "cozy_proxmox_network_reconcile_errors_total"
	MetricNetworkReconcileSeconds = "cozy_proxmox_network_reconcile_duration_seconds"
	MetricGatewayGroupsCollected  = "cozy_proxmox_gateway_groups_collected_total"
	MetricGatewayNBErrors         = "cozy_proxmox_gateway_nb_errors_total"
	MetricGatewayPassSeconds      = "cozy_proxmox_gateway_pass_duration_seconds"
)

// NoReadyCondition is the "reason" label of cozy_proxmox_networks for a
// network that carries no Ready condition (or one without a reason).
const NoReadyCondition = "NoReadyCondition"

// Values of the "result" label of cozy_proxmox_vlan_allocations_total.
const (
	AllocationAllocated = "allocated"
	AllocationExhausted = "exhausted"
	AllocationConflict  = "conflict"
	// AllocationNamespaceCap: the namespace holds as many VLANs of the
	// zone as its maxNetworksPerNamespace allows.
	AllocationNamespaceCap = "namespace_cap"
)

// Metrics holds every cozy_proxmox_* series. Build it with NewMetrics and
// give it to the controller; the gateway adapter counts its collections and
// NB errors on it too.
type Metrics struct {
	zoneTotal, zoneAllocated, zoneFree, zoneNetworks, orphaned *prometheus.GaugeVec

	networks *networkGauges

	allocations     *prometheus.CounterVec
	reconcileErrors *prometheus.CounterVec
	duration        prometheus.Histogram
	gatewayPass     *prometheus.HistogramVec
	// GroupsCollected counts OVN HA chassis groups deleted because their
	// network was gone.
	GroupsCollected prometheus.Counter
	// NBErrors counts gateway passes and releases that could not reach or
	// update the OVN NB.
	NBErrors prometheus.Counter
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
		zoneTotal:     gauge(MetricZoneVLANsTotal, "VLANs the zone may allocate (ranges minus reserved).", "zone"),
		zoneAllocated: gauge(MetricZoneVLANsAllocated, "VLANs held by networks of the zone.", "zone"),
		zoneFree:      gauge(MetricZoneVLANsFree, "VLANs the zone can still hand out.", "zone"),
		zoneNetworks:  gauge(MetricZoneNetworks, "ProxmoxNetworks bound to the zone.", "zone"),
		orphaned:      gauge(MetricOrphanedVLANs, "Kube-OVN Vlans labelled for the zone whose ProxmoxNetwork no longer exists.", "zone"),
		networks:      newNetworkGauges(),
		allocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricVLANAllocations, Help: "VLAN allocation attempts by result (allocated, exhausted, conflict, namespace_cap).",
		}, []string{"zone", "result"}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricNetworkReconcileErrors, Help: "Network reconciles that ended in an error or a not-Ready condition, by reason.",
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: MetricNetworkReconcileSeconds, Help: "Duration of a ProxmoxNetwork reconcile.", Buckets: prometheus.DefBuckets,
		}),
		gatewayPass: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: MetricGatewayPassSeconds,
			Help: "Duration of the gateway's work for one network, its OVN NB round trips included (op: ensure or release).",
			// 1 ms to 8 s: a pass is bounded by the gateway's 5 s NB timeout.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"op"}),
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
		m.zoneTotal, m.zoneAllocated, m.zoneFree, m.zoneNetworks, m.orphaned, m.networks,
		m.allocations, m.reconcileErrors, m.duration, m.gatewayPass, m.GroupsCollected, m.NBErrors,
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

// Values of the "op" label of cozy_proxmox_gateway_pass_duration_seconds.
const (
	gatewayOpEnsure  = "ensure"
	gatewayOpRelease = "release"
)

// gatewayTime records how long a gateway call that started at start took.
func (m *Metrics) gatewayTime(op string, start time.Time) {
	m.gatewayPass.WithLabelValues(op).Observe(time.Since(start).Seconds())
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
	readyReason           string    // the Ready condition's reason, or NoReadyCondition
	pool                  *[3]int32 // total, used, free
	gateway               *bool     // nil while gateways are not managed
	chassis               int
	primary               string // the gateway group's highest-priority chassis; "" when unknown
}

func (m *Metrics) network(s networkSample) { m.networks.record(s) }

// forgetNetwork drops every series of a network that is gone.
func (m *Metrics) forgetNetwork(namespace, name string) {
	m.networks.forget(networkID{namespace, name})
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
