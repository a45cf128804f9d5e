package demo

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	libovsdb "github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/reconcilers"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// nbBackoff caps the controller's NB reconnect backoff, so the demo's NB
// outage ends as soon as the database is back.
const nbBackoff = 100 * time.Millisecond

// reconnectWait bounds how long the demo waits for the controller's client
// to reconnect after the outage.
const reconnectWait = 10 * time.Second

// northbound is the demo's OVN northbound database: libovsdb's in-memory
// server on unix sockets in a temporary directory, an admin client that
// plays Kube-OVN and reads rows back (past any outage), and the
// controller's gateway client.
type northbound struct {
	// logOut is the standard logger's output before openNB: libovsdb's
	// server reports there every monitor update it cannot send to a
	// connection the demo's outage cut, so the NB silences it while it
	// runs and close gives it back.
	logOut io.Writer
	dir    string
	server *ovngatewaytest.InMemory
	admin  libovsdb.Client
	client *ovngateway.Client
	// events are what the controller's client reports (reconnects, router
	// ports that appear), which the controller takes on each converge.
	events *reconcilers.NBEvents
}

// openNB starts the in-memory NB and connects both clients.
func openNB(ctx context.Context) (_ *northbound, err error) {
	dir, err := os.MkdirTemp("", "pxdemo-nb-")
	if err != nil {
		return nil, fmt.Errorf("cannot create a directory for the OVN NB sockets: %w", err)
	}
	nb := &northbound{dir: dir, logOut: log.Writer(), events: reconcilers.NewNBEvents()}
	log.SetOutput(io.Discard)
	defer func() {
		if err != nil {
			nb.close()
		}
	}()
	if nb.server, err = ovngatewaytest.OpenInMemory(dir); err != nil {
		return nil, fmt.Errorf("cannot start the in-memory OVN NB: %w", err)
	}
	if nb.admin, err = ovngatewaytest.Dial(ctx, nb.server.DirectEndpoint()); err != nil {
		return nil, fmt.Errorf("cannot connect Kube-OVN's client to the OVN NB: %w", err)
	}
	nb.client, err = ovngateway.Dial(ctx, ovngateway.Config{Address: nb.server.Endpoint(), MaxBackoff: nbBackoff,
		OnReconnect: nb.events.Reconnected, OnRouterPort: nb.events.RouterPort})
	if err != nil {
		return nil, fmt.Errorf("cannot connect the controller's client to the OVN NB: %w", err)
	}
	return nb, nil
}

// close stops the clients and the server and removes the directory.
func (nb *northbound) close() {
	if nb.client != nil {
		nb.client.Close()
	}
	if nb.admin != nil {
		nb.admin.Close()
	}
	if nb.server != nil {
		nb.server.Close()
	}
	_ = os.RemoveAll(nb.dir)
	log.SetOutput(nb.logOut)
}

// state reads the gateway rows straight from the server.
func (nb *northbound) state(ctx context.Context) (ovngatewaytest.State, error) {
	st, err := ovngatewaytest.Admin{C: nb.admin}.State(ctx)
	if err != nil {
		return ovngatewaytest.State{}, fmt.Errorf("cannot read the OVN NB: %w", err)
	}
	return st, nil
}

// outage cuts the controller's connection to the NB and refuses new ones
// until the returned function, which brings the NB back and waits, up to
// reconnectWait, until the controller's client can use it again.
func (nb *northbound) outage() (restore func(context.Context) error) {
	nb.server.Down()
	return func(ctx context.Context) error {
		if err := nb.server.Up(); err != nil {
			return fmt.Errorf("cannot bring the OVN NB back: %w", err)
		}
		ctx, cancel := context.WithTimeout(ctx, reconnectWait)
		defer cancel()
		for {
			err := nb.client.Sync(ctx)
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("cannot reconnect the controller to the OVN NB within %s: %w", reconnectWait, err)
			}
			// A failed Sync makes the client notice the lost connection;
			// Connect waits for its next attempt.
			_ = nb.client.Connect(ctx)
		}
	}
}

// synced makes every pass see the rows Kube-OVN committed before it, as
// the simulated cluster delivers every Kubernetes write at once: the
// controller's client reads only its monitored cache, which would otherwise
// trail the other client's writes by one monitor update.
type synced struct{ c *ovngateway.Client }

var _ kubenetgateway.NB = synced{}

func (s synced) Reconcile(ctx context.Context, gw ovngateway.Gateway) (ovngateway.Outcome, error) {
	if err := s.c.Sync(ctx); err != nil {
		return ovngateway.Outcome{}, fmt.Errorf("network %q: %w", gw.ID(), err)
	}
	return s.c.Reconcile(ctx, gw)
}

func (s synced) Collect(ctx context.Context, exists ovngateway.Exists) (ovngateway.Collected, error) {
	if err := s.c.Sync(ctx); err != nil {
		return ovngateway.Collected{}, err
	}
	return s.c.Collect(ctx, exists)
}
