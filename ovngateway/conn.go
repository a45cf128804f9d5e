package ovngateway

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
)

// Connect waits for the outcome of the next connection attempt, unless the
// client is already connected, and returns its error.
func (c *Client) Connect(ctx context.Context) error {
	c.mu.Lock()
	start := c.attempts
	c.mu.Unlock()
	for {
		c.mu.Lock()
		up, closed, done, err, notify := c.nb != nil, c.closed, c.attempts > start, c.lastErr, c.notify
		c.mu.Unlock()
		switch {
		case up:
			return nil
		case closed:
			return fmt.Errorf("cannot connect to the OVN NB: %w: the client is closed", ErrInvalid)
		case done:
			return err
		}
		select {
		case <-notify:
		case <-ctx.Done():
			return wrapNB("connect to the OVN NB", ctx.Err())
		}
	}
}

// Close stops reconnecting and ends the connection for good.
func (c *Client) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
	c.mu.Unlock()
	c.done.Wait()
}

// run owns the connection: it connects, watches the connection until it is
// lost, and connects again with exponential backoff, until Close.
func (c *Client) run() {
	defer c.done.Done()
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = min(100*time.Millisecond, c.timing.maxBackoff)
	b.MaxInterval = c.timing.maxBackoff
	b.MaxElapsedTime = 0
	connected := false
	for {
		nb, err := c.attempt()
		c.settle(nb, err)
		wait := time.Duration(0)
		if err == nil {
			if connected && c.onReconnect != nil {
				go c.onReconnect()
			}
			connected = true
			b.Reset()
			c.watch(nb)
			c.settle(nil, fmt.Errorf("%w: the connection was lost; reconnecting", ErrNBUnavailable))
			nb.Close()
		} else {
			wait = b.NextBackOff()
		}
		select {
		case <-c.stop:
			return
		default:
		}
		select {
		case <-c.stop:
			return
		case <-time.After(wait):
		}
	}
}

// attempt connects a new libovsdb client to the first endpoint that is up
// (and leader) and starts the monitor. Close does not cut it short:
// libovsdb v0.8.1 may still write a monitor reply after its call gave up,
// so calls are only ever bounded by the reconnect timeout.
func (c *Client) attempt() (client.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timing.reconnect)
	defer cancel()
	nb, err := client.NewOVSDBClient(c.model, c.opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot create the OVN NB client: %w", err)
	}
	if err := nb.Connect(ctx); err != nil {
		nb.Close()
		return nil, wrapNB("connect to the OVN NB", err)
	}
	if _, err := nb.Monitor(ctx, monitor()); err != nil {
		nb.Close()
		return nil, wrapNB("monitor the OVN NB", err)
	}
	if err := onChange(nb, c.poke, c.onRouterPort); err != nil {
		nb.Close()
		return nil, wrapNB("monitor the OVN NB", err)
	}
	return nb, nil
}

// onChange calls f after every change the monitor brings into nb's cache,
// and port, when not nil, with the name of each router port added to it.
// libovsdb drops the cache when the server closes the connection, which
// may happen right after the monitor started: that is ErrNotConnected.
func onChange(nb client.Client, f func(), port func(string)) error {
	tc := nb.Cache()
	if tc == nil {
		return client.ErrNotConnected
	}
	tc.AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc: func(_ string, m model.Model) {
			if lrp, ok := m.(*nbdb.LogicalRouterPort); ok && port != nil {
				port(lrp.Name)
			}
			f()
		},
		UpdateFunc: func(string, model.Model, model.Model) { f() },
		DeleteFunc: func(string, model.Model) { f() },
	})
	return nil
}

// monitor asks for the three tables and only the columns the models hold.
// The request is built from the models' tags rather than with the client's
// monitor options: those read the client's database model without its lock,
// which races with libovsdb clearing that model when the server drops the
// connection right after Connect.
func monitor() *client.Monitor {
	return &client.Monitor{
		Method:            ovsdb.ConditionalMonitorSinceRPC,
		LastTransactionID: noTransaction,
		Tables: []client.TableMonitor{
			{Table: nbdb.HAChassisGroupTable, Fields: modelColumns(nbdb.HAChassisGroup{})},
			{Table: nbdb.HAChassisTable, Fields: modelColumns(nbdb.HAChassis{})},
			{Table: nbdb.LogicalRouterPortTable, Fields: modelColumns(nbdb.LogicalRouterPort{})},
		},
	}
}

// noTransaction is the last-transaction id of a monitor that starts from
// nothing (RFC 7047 extension monitor_cond_since).
const noTransaction = "00000000-0000-0000-0000-000000000000"

// modelColumns lists the columns of a model's ovsdb tags, without _uuid.
func modelColumns(m any) []string {
	t := reflect.TypeOf(m)
	var cols []string
	for i := range t.NumField() {
		if c := t.Field(i).Tag.Get("ovsdb"); c != "" && c != "_uuid" {
			cols = append(cols, c)
		}
	}
	return cols
}

// watch returns when the connection is lost or the client is closed. Loss
// is libovsdb reporting the disconnect (for example after the leader
// stepped down), a pass seeing ErrNotConnected, or an echo after a silent
// probe period going unanswered.
func (c *Client) watch(nb client.Client) {
	tick := time.NewTicker(min(time.Second, c.timing.probe/2))
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-nb.DisconnectNotify():
			return
		case <-c.lost:
			return
		case <-tick.C:
		}
		// libovsdb's disconnect notice is dropped when nobody is waiting
		// for it at that instant; its state says the same thing.
		if !alive(nb) {
			return
		}
		c.mu.Lock()
		idle := time.Since(c.contact)
		c.mu.Unlock()
		if idle < c.timing.probe {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.timing.probe)
		err := nb.Echo(ctx)
		cancel()
		if err != nil {
			return
		}
		c.touch()
	}
}

// settle installs the connection nb (nil when there is none) after an
// attempt or a loss, and wakes Connect.
func (c *Client) settle(nb client.Client, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempts++
	if nb != nil {
		c.contact = time.Now()
	}
	c.nb, c.lastErr = nb, err
	close(c.notify)
	c.notify = make(chan struct{})
	// Drop a loss reported for an earlier connection.
	select {
	case <-c.lost:
	default:
	}
}

func (c *Client) poke() { c.changes.broadcast() }

// changes wakes every pass waiting for the cache to change: a pass takes
// the channel of the next change, and a change closes it.
type changes struct {
	mu sync.Mutex
	// next is closed by the next change; nil while no pass waits.
	next chan struct{}
}

// wait returns a channel closed by the next change of the cache.
func (ch *changes) wait() <-chan struct{} {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.next == nil {
		ch.next = make(chan struct{})
	}
	return ch.next
}

func (ch *changes) broadcast() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.next != nil {
		close(ch.next)
		ch.next = nil
	}
}

func (c *Client) touch() {
	c.mu.Lock()
	c.contact = time.Now()
	c.mu.Unlock()
}

// session returns the current connection, or fails fast while there is
// none, so that no pass decides on a cache that may be stale.
func (c *Client) session() (*session, error) {
	c.mu.Lock()
	nb, closed, lastErr := c.nb, c.closed, c.lastErr
	c.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("%w: the client is closed", ErrNBUnavailable)
	case nb != nil && alive(nb):
		return &session{c: c, nb: nb}, nil
	case nb != nil:
		c.signalLost()
		return nil, fmt.Errorf("%w: the connection was lost; reconnecting", ErrNBUnavailable)
	case lastErr != nil:
		return nil, lastErr
	}
	return nil, fmt.Errorf("%w: not connected yet", ErrNBUnavailable)
}

// alive reports whether nb still has its connection: libovsdb drops its
// RPC client when the server goes away, and marks the client disconnected
// when the leader it uses steps down.
func alive(nb client.Client) bool {
	return nb.Connected() && nb.CurrentEndpoint() != ""
}

func (c *Client) signalLost() {
	select {
	case c.lost <- struct{}{}:
	default:
	}
}

// connectionLost tells run that a pass found the connection nb gone.
func (c *Client) connectionLost(nb client.Client, err error) {
	c.mu.Lock()
	current := c.nb == nb
	c.mu.Unlock()
	if !current || !errors.Is(err, client.ErrNotConnected) {
		return
	}
	c.signalLost()
}

// Sync waits until the cache holds every change the server had committed
// when Sync was called, such as rows another client just wrote. It costs
// one echo round trip: ovsdb-server (and libovsdb's server) send the
// monitor updates they owe a connection before they answer it, and the
// client applies them in order.
func (c *Client) Sync(ctx context.Context) error {
	s, err := c.session()
	if err != nil {
		return err
	}
	return s.sync(ctx)
}

func (s *session) sync(ctx context.Context) error {
	if err := s.nb.Echo(ctx); err != nil {
		s.c.connectionLost(s.nb, err)
		return wrapNB("sync with the OVN NB", err)
	}
	s.c.touch()
	return nil
}
