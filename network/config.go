package network

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/engine"
)

// Timings of the facts: a network that waits for something is looked at
// again after RetryAfter, every object is reconciled again after Resync, and
// a deleted subnet Kube-OVN still lists on its Vlan holds the VLAN for at
// most DefaultSubnetPruneTimeout.
const (
	RetryAfter                = 30 * time.Second
	Resync                    = 5 * time.Minute
	DefaultSubnetPruneTimeout = 10 * time.Minute
)

// FreshVLANHold is how long after the controller created a network's Vlan
// the network's status waits for Kube-OVN to report the Subnet Ready.
// Kube-OVN has not seen the Vlan yet, so the SubnetNotReady the passes of
// those moments would write is soon replaced; holding it lets the network
// reach Ready with one status write instead of two. When Kube-OVN has not
// reported by then, the status is written as it stands.
const FreshVLANHold = 2 * time.Second

// PruneTimeoutLog is logged when a VLAN is released although Kube-OVN still
// lists deleted subnets on its Vlan.
const PruneTimeoutLog = "Kube-OVN did not prune deleted subnets from the Vlan in time; releasing the VLAN anyway"

// ErrInvalidConfig says a Config cannot be used as given.
var ErrInvalidConfig = errors.New("invalid network controller configuration")

// Config configures a Controller. Only Client is required.
type Config struct {
	// Client reads single objects and writes. In a controller process it is
	// the manager's cached client; every write through it must also reach
	// the Cache, through informers (Watch) or by wrapping it with Feed.
	Client client.Client
	// APIReader reads past any cache where a decision must not be stale:
	// VLAN claims and Vlans on conflict, the delete path. Default: Client.
	APIReader client.Reader
	// Cache is the controller's index of observed objects; nil makes a new
	// one. Fill it with Controller.Load before reconciling.
	Cache *Cache
	// Clock tells the time; tests pass a fake clock. Default: real clock.
	Clock clock.WithTicker
	// SubnetPruneTimeout is --subnet-prune-timeout; 0 means
	// DefaultSubnetPruneTimeout.
	SubnetPruneTimeout time.Duration
	// Gateway manages the OVN side of each network; nil means Disabled.
	Gateway Gateway
	// Hypervisor checks the Proxmox nodes of zones with
	// spec.sdn.credentialsRef once per zone pass; nil checks none.
	Hypervisor Hypervisor
	// Metrics receives the cozy_proxmox_* series; nil keeps unregistered ones.
	Metrics *Metrics
	// EngineMetrics, when set, registers the engine's runner metrics.
	EngineMetrics prometheus.Registerer
	// Recorder receives the Events the controller emits on ProxmoxNetworks
	// (the Event* reasons), once per transition; nil emits none. A
	// controller process passes its one engine.EventsRecorder (an events
	// broadcaster's recorder, with EventActions); tests pass
	// enginetest.Recorder, or engine.EventsRecorder over
	// events.FakeRecorder.
	Recorder engine.Recorder
	// Log receives the controller's log lines. Default: discard.
	Log logr.Logger
	// MachineKinds are the ProxmoxMachine versions listed on the delete
	// path and by Load; nil means MachineKinds. A kind the API server does
	// not serve is skipped.
	MachineKinds []schema.GroupVersionKind
	// Resync is the period of the runners' full resync; 0 means Resync.
	// Negative turns it off (simulators enqueue themselves).
	Resync time.Duration
	// Workers is how many objects each runner (networks, zones,
	// namespaces) reconciles at once; 0 means 1. One object is never
	// reconciled by two workers at once; different networks are, and
	// their allocations stay unique because the zone's index hands out
	// each free ID once and the API server keeps one claim per
	// (provider network, ID). Drain with one worker is deterministic, as
	// simulators need; a controller process runs --workers.
	Workers int
	// StatusInterval is the least time between two full passes over one
	// zone (its orphans, counts and status) and over one namespace (its
	// annotation, when no network's Ready waits for it): during a burst
	// of new networks every event enqueues both and every allocation
	// changes the counts, so without it the zone's status and the
	// namespace's annotation are rewritten about once per network. 0 runs
	// every pass (simulators, whose clock stands still between passes); a
	// controller process uses DefaultStatusInterval.
	StatusInterval time.Duration
}

// DefaultStatusInterval is the StatusInterval of a controller process.
const DefaultStatusInterval = time.Second

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil {
		return c, fmt.Errorf("cannot build the network controller: Client is required: %w", ErrInvalidConfig)
	}
	if c.SubnetPruneTimeout < 0 {
		return c, fmt.Errorf("cannot build the network controller: subnet prune timeout %s is negative: %w", c.SubnetPruneTimeout, ErrInvalidConfig)
	}
	if c.Workers < 0 {
		return c, fmt.Errorf("cannot build the network controller: Workers %d is negative: %w", c.Workers, ErrInvalidConfig)
	}
	if c.StatusInterval < 0 {
		return c, fmt.Errorf("cannot build the network controller: StatusInterval %s is negative: %w", c.StatusInterval, ErrInvalidConfig)
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.APIReader == nil {
		c.APIReader = c.Client
	}
	if c.Cache == nil {
		c.Cache = NewCache()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.SubnetPruneTimeout == 0 {
		c.SubnetPruneTimeout = DefaultSubnetPruneTimeout
	}
	if c.Gateway == nil {
		c.Gateway = Disabled{}
	}
	if c.Metrics == nil {
		m, _ := NewMetrics(nil) // registers nothing, cannot fail
		c.Metrics = m
	}
	if c.Log.GetSink() == nil {
		c.Log = logr.Discard()
	}
	if c.MachineKinds == nil {
		c.MachineKinds = MachineKinds
	}
	if c.Resync == 0 {
		c.Resync = Resync
	}
	return c, nil
}
