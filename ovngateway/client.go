package ovngateway

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
)

// Connection defaults.
const (
	// DefaultInactivityProbe is how long a silent connection waits before an
	// echo checks that the server is still there; an echo unanswered for as
	// long drops the connection and starts a reconnect.
	DefaultInactivityProbe = 10 * time.Second
	// DefaultReconnectTimeout bounds each connection attempt.
	DefaultReconnectTimeout = 5 * time.Second
	// DefaultMaxBackoff caps the wait between connection attempts.
	DefaultMaxBackoff = 30 * time.Second
)

// Config says how to reach the northbound database.
type Config struct {
	// Address is a comma-separated list of endpoints (see ParseAddress),
	// tried in order. Against a clustered NB only the RAFT leader is used,
	// so writes always reach the leader.
	Address string
	// TLS is required when an endpoint is ssl:. Build it with TLSConfig.
	// +optional
	TLS *tls.Config
	// InactivityProbe defaults to DefaultInactivityProbe.
	// +optional
	InactivityProbe time.Duration
	// ReconnectTimeout defaults to DefaultReconnectTimeout and must be
	// shorter than InactivityProbe.
	// +optional
	ReconnectTimeout time.Duration
	// MaxBackoff defaults to DefaultMaxBackoff.
	// +optional
	MaxBackoff time.Duration
	// Logger receives libovsdb's connection logs.
	// +optional
	Logger *logr.Logger
	// OnReconnect is called, on a goroutine of its own, each time the
	// client has connected again after losing a connection, once the cache
	// holds the server's rows. The server may be another member (a new RAFT
	// leader) or a database rebuilt empty, so a caller reconciles every
	// network again: those still right cost no transaction.
	// +optional
	OnReconnect func()
	// OnRouterPort is called with the name of each Logical_Router_Port
	// that appears in the client's cache (those of the monitor's first
	// fill included), on the goroutine that applies the server's updates:
	// it must return at once. A caller whose network found its router
	// port missing (ReasonRouterPortMissing) reconciles it again now
	// instead of after RetryAfter: Kube-OVN has made the port.
	// +optional
	OnRouterPort func(name string)
}

// Client manages the gateways of many networks over one northbound
// connection. It reads only from a cache fed by a monitor of the three
// tables and the columns it uses, and writes at most one transaction per
// network and pass. It is safe for concurrent use.
type Client struct {
	model  model.ClientDBModel
	opts   []client.Option
	timing timing
	// onReconnect is Config.OnReconnect, onRouterPort
	// Config.OnRouterPort.
	onReconnect  func()
	onRouterPort func(string)
	txns         atomic.Uint64
	changes      changes
	lost         chan struct{}
	stop         chan struct{}
	done         sync.WaitGroup
	// co merges the writes of concurrent Reconcile calls.
	co coalescer

	mu sync.Mutex
	// nb is the libovsdb client of the current connection; nil while
	// disconnected. Each connection gets a new one.
	nb       client.Client
	closed   bool
	attempts int
	lastErr  error
	contact  time.Time
	// notify is closed and replaced whenever an attempt ends.
	notify chan struct{}
}

// session is one pass's view of the current connection.
type session struct {
	c  *Client
	nb client.Client
}

type timing struct {
	probe, reconnect, maxBackoff time.Duration
}

// Model is the client model: the generated gateway tables plus client
// indexes on the ownership tags and on the port's group reference.
func Model() (model.ClientDBModel, error) {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		return model.ClientDBModel{}, fmt.Errorf("cannot build the NB gateway model: %w", err)
	}
	m.SetIndexes(map[string][]model.ClientIndex{
		nbdb.HAChassisGroupTable: {
			{Columns: []model.ColumnKey{{Column: "external_ids", Key: OwnerKey}}},
			{Columns: []model.ColumnKey{{Column: "external_ids", Key: NetworkKey}}},
		},
		nbdb.LogicalRouterPortTable: {
			{Columns: []model.ColumnKey{{Column: "ha_chassis_group"}}},
			{Columns: []model.ColumnKey{{Column: "external_ids", Key: GatewayMTUOwnerKey}}},
		},
	})
	return m, nil
}

// New checks cfg and starts connecting in the background: to the first
// endpoint that is up (and leader, when clustered), then again with
// exponential backoff whenever the connection is lost. Passes fail with
// ErrNBUnavailable while there is no connection. Close stops it.
func New(cfg Config) (*Client, error) {
	opts, tm, err := cfg.options()
	if err != nil {
		return nil, err
	}
	m, err := Model()
	if err != nil {
		return nil, err
	}
	if _, err := client.NewOVSDBClient(m, opts...); err != nil {
		return nil, fmt.Errorf("cannot create the OVN NB client: %w", err)
	}
	c := &Client{
		model: m, opts: opts, timing: tm, onReconnect: cfg.OnReconnect, onRouterPort: cfg.OnRouterPort,
		lost: make(chan struct{}, 1),
		stop: make(chan struct{}), notify: make(chan struct{}),
	}
	c.done.Add(1)
	go c.run()
	return c, nil
}

// Dial is New followed by Connect.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// options turns cfg into libovsdb options and the connection timing.
//
// libovsdb's own reconnect and inactivity check are not used: in v0.8.1 a
// transaction that completes while the connection drops can send on a
// channel its disconnect handler closes, and a client that reconnects
// shares its cache with the cleanup of the connection it lost. The client
// reconnects with a new libovsdb client each time and probes itself (see
// run).
func (cfg Config) options() ([]client.Option, timing, error) {
	endpoints, err := ParseAddress(cfg.Address)
	if err != nil {
		return nil, timing{}, err
	}
	if needsTLS(endpoints) && cfg.TLS == nil {
		return nil, timing{}, fmt.Errorf("OVN NB address %q: %w: ssl: endpoints need a TLS configuration (see TLSConfig)", cfg.Address, ErrInvalid)
	}
	tm := timing{
		probe:      orDefault(cfg.InactivityProbe, DefaultInactivityProbe),
		reconnect:  orDefault(cfg.ReconnectTimeout, DefaultReconnectTimeout),
		maxBackoff: orDefault(cfg.MaxBackoff, DefaultMaxBackoff),
	}
	if tm.reconnect >= tm.probe {
		return nil, timing{}, fmt.Errorf("reconnect timeout %s: %w: it must be shorter than the inactivity probe %s", tm.reconnect, ErrInvalid, tm.probe)
	}
	opts := []client.Option{client.WithLeaderOnly(true)}
	for _, e := range endpoints {
		opts = append(opts, client.WithEndpoint(e))
	}
	if cfg.TLS != nil {
		opts = append(opts, client.WithTLSConfig(cfg.TLS))
	}
	if cfg.Logger != nil {
		opts = append(opts, client.WithLogger(cfg.Logger))
	}
	return opts, tm, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Transactions is how many transactions the client has sent so far.
func (c *Client) Transactions() uint64 { return c.txns.Load() }

// Endpoint is the endpoint in use, or "" while disconnected.
func (c *Client) Endpoint() string {
	c.mu.Lock()
	nb := c.nb
	c.mu.Unlock()
	if nb == nil || !alive(nb) {
		return ""
	}
	return nb.CurrentEndpoint()
}
