package ovngateway

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// staleWrites decides every gateway on what the cache holds and builds its
// write, as concurrent Reconcile calls do before they queue.
func staleWrites(t *testing.T, ctx context.Context, c *Client, gws []Gateway) (*session, []*write) {
	t.Helper()
	s, err := c.session()
	if err != nil {
		t.Fatal(err)
	}
	var ws []*write
	for _, gw := range gws {
		v, err := s.view(ctx, gw.Network)
		if err != nil {
			t.Fatal(err)
		}
		p := decide(gw, v)
		if !p.writes() {
			t.Fatalf("network %s: the decision must write, got %+v", gw.ID(), p.outcome)
		}
		tx := &txn{prefix: c.co.prefix()}
		if err := s.buildInto(tx, gw, v, p); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, &write{ctx: ctx, nb: s.nb, port: gw.RouterPort, t: tx, done: make(chan error, 1)})
	}
	return s, ws
}

// TestMergedFailures sends the writes of six networks, decided before the
// NB changed behind the client's back, in one merged transaction: the
// write of a port deleted meanwhile fails an operation of its own (a wait),
// the write of a group someone else created meanwhile fails the commit (a
// unique name), and a second port is deleted too. Each of those three
// callers gets ErrConflict, and only they: the other writes commit, so
// each caller's answer is the one its write would have got alone. Only a
// real ovsdb-server enforces the wait on an empty column.
func TestMergedFailures(t *testing.T) {
	s := ovngatewaytest.StartReal(t)
	admin := ovngatewaytest.Connect(t, s.Endpoint())
	var gws []Gateway
	for i := range 6 {
		port := fmt.Sprintf("vpc1-sub%d", i)
		ovngatewaytest.AddRouterPort(t, admin, "vpc1", port)
		gws = append(gws, Gateway{
			Network: Network{Namespace: "tenant", Name: fmt.Sprintf("net%d", i), RouterPort: port},
			Members: []Member{{Node: "n1", Chassis: "ch-n1", Priority: 100}, {Node: "n2", Chassis: "ch-n2", Priority: 90}},
		})
	}
	ctx, c := dialInternal(t, s.Endpoint())
	sess, ws := staleWrites(t, ctx, c, gws)

	ovngatewaytest.DeleteRouterPort(t, admin, "vpc1-sub1")
	ovngatewaytest.DeleteRouterPort(t, admin, "vpc1-sub4")
	theirs := ovngatewaytest.AddGroup(t, admin, "px-vpc1-sub3", map[string]string{OwnerKey: "kube-ovn"})
	before := c.Transactions()
	sess.commitMerged(ctx, ws)

	failed := map[string]bool{"vpc1-sub1": true, "vpc1-sub3": true, "vpc1-sub4": true}
	for i, w := range ws {
		err := <-w.done
		switch {
		case failed[w.port] && !errors.Is(err, ErrConflict):
			t.Errorf("network %d (%s): got %v, want its own ErrConflict", i, w.port, err)
		case !failed[w.port] && err != nil:
			t.Errorf("network %d (%s): got %v, want nil: another caller's failure must not fail it", i, w.port, err)
		}
	}
	// 1: sub1's wait fails; 2: without sub1, sub4's wait fails; 3: without
	// both, the commit fails on sub3's name; 4-5: the halves {0,2} commit
	// and {3,5} fail again; 6-7: sub3 alone fails, sub5 alone commits.
	if got := c.Transactions() - before; got != 7 {
		t.Errorf("the merged transaction with failures sent %d transactions, want 7", got)
	}
	st := ovngatewaytest.Dump(t, admin)
	for _, gw := range gws {
		port, group := st.Ports[gw.RouterPort], st.Groups[gw.Group()]
		switch gw.RouterPort {
		case "vpc1-sub1", "vpc1-sub4":
			if _, ok := st.Groups[gw.Group()]; ok {
				t.Errorf("%s: a group was created for a deleted port: %+v", gw.RouterPort, group)
			}
		case "vpc1-sub3":
			if port.Group != "" || group.ExternalIDs[OwnerKey] != "kube-ovn" || len(group.Chassis) != 0 {
				t.Errorf("%s: the foreign group or the port was written: port %+v, group %+v", gw.RouterPort, port, group)
			}
		default:
			if port.Group != gw.Group() || len(group.Chassis) != 2 {
				t.Errorf("%s: not converged: port %+v, group %+v", gw.RouterPort, port, group)
			}
		}
	}
	if ovngatewaytest.GroupUUID(t, admin, "px-vpc1-sub3") != theirs {
		t.Errorf("the foreign group was replaced")
	}
}

// dialInternal connects a client to endpoint and returns it with a context
// of 10s; both end on cleanup.
func dialInternal(t *testing.T, endpoint string) (context.Context, *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, err := Dial(ctx, Config{Address: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return ctx, c
}

// TestCoalescerQueue: writes that arrive while every transaction slot is
// busy wait in the queue and leave it in batches of at most BatchSize,
// oldest first, never two of one router port or two connections in one
// batch; a slot is given back only when the queue is empty.
func TestCoalescerQueue(t *testing.T) {
	var a, b client.Client = nil, &struct{ client.Client }{}
	var co coalescer
	for i := range BatchSize + 10 {
		co.queue = append(co.queue, &write{nb: a, port: fmt.Sprintf("p%d", i)})
	}
	co.queue = append(co.queue, &write{nb: a, port: "p0"}, &write{nb: b, port: "q"})
	co.running = batchesInFlight
	first := co.take()
	if len(first) != BatchSize || first[0].port != "p0" || first[BatchSize-1].port != fmt.Sprintf("p%d", BatchSize-1) {
		t.Fatalf("first batch: %d writes from %s", len(first), first[0].port)
	}
	second := co.take()
	ports := []string{}
	for _, w := range second {
		ports = append(ports, w.port)
	}
	if len(second) != 11 || second[10].port != "p0" {
		t.Errorf("second batch: %v, want p100-p109 and the second write of p0", ports)
	}
	if !co.release() {
		t.Errorf("a slot was given back with a write still queued")
	}
	if third := co.take(); len(third) != 1 || third[0].nb != b {
		t.Errorf("third batch: %d writes, want the write on the other connection", len(third))
	}
	if co.release() || co.running != batchesInFlight-1 {
		t.Errorf("an empty queue must give the slot back: running %d", co.running)
	}
}

// TestChangesWakeEveryWaiter: a change of the cache wakes every pass
// waiting for one, not just the first, so that concurrent calls waiting
// for their writes to show up do not sit out cacheWait.
func TestChangesWakeEveryWaiter(t *testing.T) {
	var ch changes
	a, b := ch.wait(), ch.wait()
	ch.broadcast()
	for i, w := range []<-chan struct{}{a, b} {
		select {
		case <-w:
		default:
			t.Errorf("waiter %d was not woken", i)
		}
	}
	next := ch.wait()
	select {
	case <-next:
		t.Errorf("a waiter after the change was woken by it")
	default:
	}
}
