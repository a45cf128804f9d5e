package ovngateway

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// write is the transaction one Reconcile call decided on, waiting to be
// sent together with the writes of the calls that wait at the same moment.
type write struct {
	ctx context.Context
	nb  client.Client
	// port is the router port written: two writes of one port never share
	// a transaction.
	port string
	t    *txn
	// done receives the write's own result, exactly once.
	done chan error
}

// coalescer merges the writes of concurrent Reconcile calls into shared
// transactions: up to BatchSize writes per transaction and batchesInFlight
// transactions at a time, as ReconcileAll does. Nothing waits for company:
// a write that finds a transaction slot free is sent at once, and the
// writes that arrive while every slot is busy go out together when one
// frees.
type coalescer struct {
	mu      sync.Mutex
	queue   []*write
	running int
	// seq makes the named UUIDs of every write unique, so that writes
	// decided apart can share a transaction.
	seq uint64
}

// prefix is a named-UUID prefix no other write uses.
func (co *coalescer) prefix() string {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.seq++
	return fmt.Sprintf("w%d", co.seq)
}

// commit sends t, merged with the writes of other Reconcile calls waiting
// at that moment, and returns t's own result: nil when it committed with
// every row count right, its own failed operations otherwise (ErrConflict),
// or ErrNBUnavailable when the transaction got no answer or ctx ended
// first.
func (s *session) commit(ctx context.Context, port string, t *txn) error {
	w := &write{ctx: ctx, nb: s.nb, port: port, t: t, done: make(chan error, 1)}
	co := &s.c.co
	co.mu.Lock()
	co.queue = append(co.queue, w)
	var batch []*write
	if co.running < batchesInFlight {
		co.running++
		batch = co.take()
	}
	co.mu.Unlock()
	if batch != nil {
		// A free slot: this call sends the batch itself, so a lone call
		// costs no hand-off; whatever queued meanwhile goes to a drainer.
		s.c.sendBatch(batch)
		if co.release() {
			go s.c.drain()
		}
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return wrapNB("run the NB transaction", ctx.Err())
	}
}

// take removes from the queue the next batch: the oldest writes on the
// connection of the first, one per router port, at most BatchSize. The
// caller holds mu.
func (co *coalescer) take() []*write {
	if len(co.queue) == 0 {
		return nil
	}
	nb := co.queue[0].nb
	ports := map[string]bool{}
	var batch, rest []*write
	for _, w := range co.queue {
		if len(batch) < BatchSize && w.nb == nb && !ports[w.port] {
			ports[w.port] = true
			batch = append(batch, w)
			continue
		}
		rest = append(rest, w)
	}
	co.queue = rest
	return batch
}

// release gives back a transaction slot, unless writes are queued: then
// it keeps the slot and reports that a drainer must send them.
func (co *coalescer) release() bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	if len(co.queue) > 0 {
		return true
	}
	co.running--
	return false
}

// drain sends batches from the queue until it is empty, on a slot its
// starter held.
func (c *Client) drain() {
	co := &c.co
	for {
		co.mu.Lock()
		batch := co.take()
		co.mu.Unlock()
		c.sendBatch(batch)
		if !co.release() {
			return
		}
	}
}

// sendBatch sends the writes of one batch (all on one connection) within
// PassTimeout plus batchTimePerNetwork per write; a write whose caller has
// given up is dropped before anything is sent.
func (c *Client) sendBatch(batch []*write) {
	live := batch[:0:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.done <- wrapNB("run the NB transaction", err)
			continue
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), PassTimeout+time.Duration(len(live))*batchTimePerNetwork)
	defer cancel()
	s := &session{c: c, nb: live[0].nb}
	s.commitMerged(ctx, live)
}

// commitMerged sends the writes ws in one transaction and gives each its
// own result. OVSDB runs a transaction's operations in order and stops at
// the first that fails, so a failed operation names the write it belongs
// to: that write gets its own error, and the others, whose rows are
// disjoint from its rows and which therefore would have committed without
// it, are sent again without it. A commit that fails after every
// operation succeeded (a unique index or a reference) names no operation:
// the writes are split in halves until each failure is a write's own.
// Row counts are checked per write, against that write's operations.
func (s *session) commitMerged(ctx context.Context, ws []*write) {
	ws = slices.Clone(ws)
	for len(ws) > 0 {
		if len(ws) == 1 {
			ws[0].done <- s.transact(ctx, ws[0].t)
			return
		}
		n := 0
		for _, w := range ws {
			n += len(w.t.ops)
		}
		ops := make([]ovsdb.Operation, 0, n)
		bounds := make([]int, 0, len(ws)+1)
		for _, w := range ws {
			bounds = append(bounds, len(ops))
			ops = append(ops, w.t.ops...)
		}
		bounds = append(bounds, len(ops))
		res, err := s.send(ctx, ops)
		if err != nil {
			for _, w := range ws {
				w.done <- err
			}
			return
		}
		if len(res) < len(ops) {
			err := &TransactionError{Details: []string{fmt.Sprintf("%d operations sent, %d results received", len(ops), len(res))}}
			for _, w := range ws {
				w.done <- err
			}
			return
		}
		if i := slices.IndexFunc(res[:len(ops)], func(r ovsdb.OperationResult) bool { return r.Error != "" }); i >= 0 {
			j := owner(bounds, i)
			ws[j].done <- ws[j].t.check(res[bounds[j]:bounds[j+1]])
			ws = slices.Delete(ws, j, j+1)
			continue
		}
		if len(res) > len(ops) && res[len(ops)].Error != "" {
			half := len(ws) / 2
			s.commitMerged(ctx, ws[:half])
			s.commitMerged(ctx, ws[half:])
			return
		}
		for j, w := range ws {
			w.done <- w.t.check(res[bounds[j]:bounds[j+1]])
		}
		return
	}
}

// owner is the index of the write whose operations, starting at bounds[j],
// hold operation i.
func owner(bounds []int, i int) int {
	j, found := slices.BinarySearch(bounds, i)
	if !found {
		j--
	}
	// A write without operations starts where the next one does.
	for bounds[j+1] <= i {
		j++
	}
	return j
}
