package ovngateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/cache"
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
	// DefaultReconnectTimeout bounds each reconnection attempt.
	DefaultReconnectTimeout = 5 * time.Second
	// DefaultMaxBackoff caps the wait between reconnection attempts.
	DefaultMaxBackoff = 30 * time.Second
	// liveWindow is how long a successful round trip vouches for the
	// connection before the next pass checks it with an echo.
	liveWindow = time.Second
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
}

// Client manages the gateways of many networks over one northbound
// connection. It reads only from a cache fed by a monitor of the three
// tables and the columns it uses, and writes at most one transaction per
// network and pass. It is safe for concurrent use.
type Client struct {
	nb      client.Client
	probe   time.Duration
	txns    atomic.Uint64
	changed chan struct{}
	stop    chan struct{}
	done    sync.WaitGroup

	mu        sync.Mutex
	monitored bool
	closed    bool
	contact   time.Time
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
		},
	})
	return m, nil
}

// New checks cfg and prepares a client without touching the network. The
// first pass (or Connect) connects; after that the client reconnects by
// itself with exponential backoff.
func New(cfg Config) (*Client, error) {
	opts, probe, err := cfg.options()
	if err != nil {
		return nil, err
	}
	m, err := Model()
	if err != nil {
		return nil, err
	}
	nb, err := client.NewOVSDBClient(m, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot create the OVN NB client: %w", err)
	}
	return &Client{nb: nb, probe: probe, changed: make(chan struct{}, 1), stop: make(chan struct{})}, nil
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

// options turns cfg into libovsdb options and the inactivity probe period.
//
// libovsdb's own inactivity check is not used: in v0.8.1 a transaction that
// completes while the connection drops can send on a channel the disconnect
// handler is closing. The client probes with echo itself (see prober) and
// lets libovsdb reconnect.
func (cfg Config) options() ([]client.Option, time.Duration, error) {
	endpoints, err := ParseAddress(cfg.Address)
	if err != nil {
		return nil, 0, err
	}
	if needsTLS(endpoints) && cfg.TLS == nil {
		return nil, 0, fmt.Errorf("OVN NB address %q: %w: ssl: endpoints need a TLS configuration (see TLSConfig)", cfg.Address, ErrInvalid)
	}
	probe := orDefault(cfg.InactivityProbe, DefaultInactivityProbe)
	reconnect := orDefault(cfg.ReconnectTimeout, DefaultReconnectTimeout)
	if reconnect >= probe {
		return nil, 0, fmt.Errorf("reconnect timeout %s: %w: it must be shorter than the inactivity probe %s", reconnect, ErrInvalid, probe)
	}
	opts := []client.Option{
		client.WithLeaderOnly(true),
		client.WithReconnect(reconnect, newBackoff(orDefault(cfg.MaxBackoff, DefaultMaxBackoff))),
	}
	for _, e := range endpoints {
		opts = append(opts, client.WithEndpoint(e))
	}
	if cfg.TLS != nil {
		opts = append(opts, client.WithTLSConfig(cfg.TLS))
	}
	if cfg.Logger != nil {
		opts = append(opts, client.WithLogger(cfg.Logger))
	}
	return opts, probe, nil
}

// newBackoff never gives up: libovsdb panics when its reconnect backoff
// stops.
func newBackoff(maxInterval time.Duration) backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = maxInterval
	b.MaxElapsedTime = 0
	return b
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Connect connects to the first endpoint that is up (and leader, when
// clustered) and starts the monitor. It does nothing when already done.
func (c *Client) Connect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("cannot connect to the OVN NB: %w: the client is closed", ErrInvalid)
	}
	if c.monitored {
		return nil
	}
	if err := c.nb.Connect(ctx); err != nil {
		return wrapNB("connect to the OVN NB", err)
	}
	if _, err := c.nb.Monitor(ctx, c.monitor()); err != nil {
		return wrapNB("monitor the OVN NB", err)
	}
	c.nb.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(string, model.Model) { c.poke() },
		UpdateFunc: func(string, model.Model, model.Model) { c.poke() },
		DeleteFunc: func(string, model.Model) { c.poke() },
	})
	c.monitored = true
	c.contact = time.Now()
	c.done.Add(1)
	go c.prober()
	return nil
}

// prober sends an echo after each probe period without traffic and drops a
// connection that does not answer in time, so that libovsdb reconnects to
// the next endpoint that is up (and leader).
func (c *Client) prober() {
	defer c.done.Done()
	tick := time.NewTicker(c.probe / 2)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		idle := time.Since(c.contact)
		c.mu.Unlock()
		if idle < c.probe {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.probe)
		err := c.nb.Echo(ctx)
		cancel()
		switch {
		case err == nil:
			c.touch()
		case errors.Is(err, client.ErrNotConnected):
			// Already reconnecting.
		default:
			c.nb.Disconnect()
		}
	}
}

// monitor asks for the three tables and only the columns the models hold.
func (c *Client) monitor() *client.Monitor {
	var (
		g nbdb.HAChassisGroup
		h nbdb.HAChassis
		p nbdb.LogicalRouterPort
	)
	return c.nb.NewMonitor(
		client.WithTable(&g, &g.Name, &g.HaChassis, &g.ExternalIDs),
		client.WithTable(&h, &h.ChassisName, &h.Priority),
		client.WithTable(&p, &p.Name, &p.GatewayChassis, &p.HaChassisGroup),
	)
}

func (c *Client) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Close ends the connection for good.
func (c *Client) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
	c.mu.Unlock()
	c.done.Wait()
	c.nb.Close()
}

// Transactions is how many transactions the client has sent so far.
func (c *Client) Transactions() uint64 { return c.txns.Load() }

// Endpoint is the endpoint in use, or "" while disconnected.
func (c *Client) Endpoint() string { return c.nb.CurrentEndpoint() }

// ready connects when needed and checks that the cache can be trusted: the
// connection answered within liveWindow, or answers an echo now. While the
// client reconnects its cache may be stale, so passes fail instead of
// deciding on it.
func (c *Client) ready(ctx context.Context) error {
	if err := c.Connect(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	fresh := time.Since(c.contact) < liveWindow
	c.mu.Unlock()
	if fresh {
		return nil
	}
	errCh := make(chan error, 1)
	go func() { errCh <- c.nb.Echo(ctx) }()
	select {
	case err := <-errCh:
		if err != nil {
			return wrapNB("reach the OVN NB", err)
		}
	case <-ctx.Done():
		return wrapNB("reach the OVN NB", ctx.Err())
	}
	c.touch()
	return nil
}

func (c *Client) touch() {
	c.mu.Lock()
	c.contact = time.Now()
	c.mu.Unlock()
}
