package ovngateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
)

// cacheWait bounds how long a pass waits for its own write to show up in
// the cache, so that the next pass decides on it.
const cacheWait = time.Second

// Reconcile makes the network's router port use its HA_Chassis_Group with
// the wanted members. It decides from the cache at once, and its write commits
// within its transaction's time (PassTimeout plus 100ms per network the
// transaction writes) once a slot is free. It reads only from the cache: a
// network that is already right costs no transaction, and any change is
// written in one transaction whose operation results are checked. Calls
// made at the same time share transactions: a call whose write finds one
// of six transaction slots free sends it at once, and the writes that
// queue meanwhile go out together, up to BatchSize per transaction, as
// ReconcileAll's batches do; each call still gets the result of its own
// operations (see commitMerged). Rows of other owners are never written;
// the outcome says why they were left alone. Errors wrap ErrNBUnavailable,
// ErrConflict or ErrInvalid.
func (c *Client) Reconcile(ctx context.Context, gw Gateway) (Outcome, error) {
	if err := gw.Validate(); err != nil {
		return Outcome{}, err
	}
	// The decision reads only the cache, which never waits, so it needs no
	// deadline of its own. A write queued behind busy transaction slots is
	// bounded by its batch's deadline (PassTimeout plus 100ms per network,
	// as in ReconcileAll): only the caller's own ctx cuts the wait short.
	s, err := c.session()
	if err != nil {
		return Outcome{}, fmt.Errorf("network %q: %w", gw.ID(), err)
	}
	v, err := s.view(ctx, gw.Network)
	if err != nil {
		return Outcome{}, fmt.Errorf("network %q: %w", gw.ID(), err)
	}
	p := decide(gw, v)
	if !p.writes() {
		return p.outcome, nil
	}
	t := &txn{prefix: c.co.prefix()}
	if err := s.buildInto(t, gw, v, p); err != nil {
		return Outcome{}, err
	}
	if err := s.commit(ctx, gw.RouterPort, t); err != nil {
		return Outcome{}, fmt.Errorf("network %q: %w", gw.ID(), err)
	}
	p.outcome.Changed = true
	s.awaitCache(ctx, []written{{gw: gw, created: p.created(v)}})
	return p.outcome, nil
}

// written is a network whose write committed and which a pass waits to see
// in the cache. created is the UUID of its router port row when the write
// created the network's group and pointed the port at it (see portShows).
type written struct {
	gw      Gateway
	created string
}

// created is the port row's UUID when p creates the group and points the
// port at it, else "".
func (p plan) created(v view) string {
	if p.create && p.point {
		return v.port.UUID
	}
	return ""
}

// portShows reports whether the cache already has the port row portUUID
// pointing at the group named group. After a transaction that created that
// group and pointed the port at it, this is the whole write: the name is
// unique, and the server sends a transaction's rows in one update, which
// libovsdb applies to the cache at once. It costs two lookups by UUID where
// reading the network costs a view.
func (s *session) portShows(portUUID, group string) bool {
	tc := s.nb.Cache()
	if tc == nil {
		return false
	}
	ports, groups := tc.Table(nbdb.LogicalRouterPortTable), tc.Table(nbdb.HAChassisGroupTable)
	if ports == nil || groups == nil {
		return false
	}
	port, ok := ports.Row(portUUID).(*nbdb.LogicalRouterPort)
	if !ok || port.HaChassisGroup == nil {
		return false
	}
	g, ok := groups.Row(*port.HaChassisGroup).(*nbdb.HAChassisGroup)
	return ok && g.Name == group
}

// view reads what the cache holds for the network.
func (s *session) view(ctx context.Context, n Network) (view, error) {
	var v view
	port := &nbdb.LogicalRouterPort{Name: n.RouterPort}
	if ok, err := s.get(ctx, port); err != nil {
		return v, err
	} else if ok {
		v.port = port
	}
	group := &nbdb.HAChassisGroup{Name: n.Group()}
	if ok, err := s.get(ctx, group); err != nil {
		return v, err
	} else if ok {
		v.group = group
		v.members = make(map[string]nbdb.HAChassis, len(group.HaChassis))
		for _, u := range group.HaChassis {
			h := &nbdb.HAChassis{UUID: u}
			if ok, err := s.get(ctx, h); err != nil {
				return v, err
			} else if ok {
				v.members[u] = *h
			}
		}
	}
	if v.port != nil && v.port.HaChassisGroup != nil && (v.group == nil || *v.port.HaChassisGroup != v.group.UUID) {
		v.portGroup = *v.port.HaChassisGroup
		other := &nbdb.HAChassisGroup{UUID: v.portGroup}
		if ok, err := s.get(ctx, other); err != nil {
			return v, err
		} else if ok {
			v.portGroup = other.Name
		}
	}
	return v, nil
}

// get reads m from the cache by its UUID or schema index.
func (s *session) get(ctx context.Context, m any) (bool, error) {
	err := s.nb.Get(ctx, m)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, client.ErrNotFound):
		return false, nil
	}
	return false, wrapNB("read the NB cache", err)
}

// transact sends t and checks every operation's result and row count.
func (s *session) transact(ctx context.Context, t *txn) error {
	res, err := s.send(ctx, t.ops)
	if err != nil {
		return err
	}
	return t.check(res)
}

// send sends ops as one transaction and returns the results; an error says
// the transaction got no answer.
func (s *session) send(ctx context.Context, ops []ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	s.c.txns.Add(1)
	res, err := s.nb.Transact(ctx, ops...)
	if err != nil {
		s.c.connectionLost(s.nb, err)
		return nil, wrapNB("run the NB transaction", err)
	}
	s.c.touch()
	return res, nil
}

// check turns the results of t's operations into an error: a failed
// operation or commit, or a row count other than the one wanted.
func (t *txn) check(res []ovsdb.OperationResult) error {
	var details []string
	if opErrs, err := ovsdb.CheckOperationResults(res, t.ops); err != nil {
		for _, e := range opErrs {
			if op := e.Operation(); op != nil {
				details = append(details, fmt.Sprintf("%s %s: %v", op.Op, op.Table, e))
			} else {
				details = append(details, e.Error())
			}
		}
		if len(opErrs) == 0 {
			details = append(details, err.Error())
		}
		return &TransactionError{Details: details}
	}
	for i, want := range t.counts {
		if want != anyCount && res[i].Count != want {
			details = append(details, fmt.Sprintf("%s %s: matched %d rows, want %d", t.ops[i].Op, t.ops[i].Table, res[i].Count, want))
		}
	}
	if len(details) > 0 {
		return &TransactionError{Details: details}
	}
	return nil
}

// awaitCache waits, up to cacheWait, until the cache shows every written
// network as settled, so a pass right after this one sees its write. A
// server that sends monitor updates before the transaction reply
// (ovsdb-server) needs no wait at all: the first look finds them.
func (s *session) awaitCache(ctx context.Context, ws []written) {
	if s.settled(ctx, ws) {
		return
	}
	timer := time.NewTimer(cacheWait)
	defer timer.Stop()
	for {
		// Take the channel before reading the cache, so that a change
		// between the read and the wait is not missed.
		changed := s.c.changes.wait()
		if s.settled(ctx, ws) {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// settled reports whether the cache shows every written network as needing
// no write, or that it cannot tell (a cache read failed: nothing is left to
// wait for).
func (s *session) settled(ctx context.Context, ws []written) bool {
	for _, w := range ws {
		if w.created != "" && s.portShows(w.created, w.gw.Group()) {
			continue
		}
		v, err := s.view(ctx, w.gw.Network)
		if err != nil {
			return true
		}
		if decide(w.gw, v).writes() {
			return false
		}
	}
	return true
}
