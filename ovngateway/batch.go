package ovngateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

const (
	// BatchSize is how many networks' writes ReconcileAll puts in one
	// transaction.
	BatchSize = 50
	// batchesInFlight is how many batch transactions ReconcileAll keeps
	// outstanding: while the server commits one batch, the client decides
	// and encodes the next and decodes the monitor update of the last.
	// Six of 50 keep both sides busier than three of 100 (the same 300
	// writes outstanding): 1,000 calls at once took 129-155 ms against
	// 158-177 ms, the two shapes taking turns in one process (see
	// docs/performance.md).
	batchesInFlight = 6
	// batchTimePerNetwork extends PassTimeout for each network a batch
	// writes: a healthy NB commits 100 networks in well under a second,
	// but a busy RAFT leader (or a test server) may need longer.
	batchTimePerNetwork = 100 * time.Millisecond
)

// ReconcileAll is Reconcile for many networks at once, for the passes that
// touch every network of a provider network: start-up, the periodic resync,
// and a Node change that re-ranks every VPC. It decides each network from
// the cache like Reconcile, then sends the writes of up to BatchSize
// networks in one transaction (within PassTimeout plus 100ms per network of
// the batch), so each network's change still lands in exactly one
// transaction, and networks that are right cost nothing. Three batches are in
// flight at a time; the networks of one call are disjoint, so no batch
// depends on another. A batch the server refuses (ErrConflict) is retried
// one network per transaction, so a conflict in one network never holds
// back the others. Outcomes and errors come back in the order of gws; a
// router port listed twice is ErrInvalid from its second entry on.
func (c *Client) ReconcileAll(ctx context.Context, gws []Gateway) ([]Outcome, []error) {
	outs, errs := make([]Outcome, len(gws)), make([]error, len(gws))
	ports := make(map[string]bool, len(gws))
	for i, gw := range gws {
		if ports[gw.RouterPort] {
			errs[i] = fmt.Errorf("network %q: %w: router port %q is listed twice", gw.ID(), ErrInvalid, gw.RouterPort)
		}
		ports[gw.RouterPort] = true
	}
	s, err := c.session()
	if err != nil {
		for i, gw := range gws {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("network %q: %w", gw.ID(), err)
			}
		}
		return outs, errs
	}
	var (
		wg     sync.WaitGroup
		slots  = make(chan struct{}, batchesInFlight)
		mu     sync.Mutex
		settle []written
	)
	for start := 0; start < len(gws); start += BatchSize {
		end := min(start+BatchSize, len(gws))
		b, o, e := gws[start:end], outs[start:end], errs[start:end]
		slots <- struct{}{}
		bctx, cancel := context.WithTimeout(ctx, PassTimeout+time.Duration(len(b))*batchTimePerNetwork)
		t, pending, created := s.planBatch(bctx, b, o, e)
		if len(pending) == 0 {
			cancel()
			<-slots
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { cancel(); <-slots; wg.Done() }()
			if s.commitBatch(bctx, t, pending, b, o, e) {
				mu.Lock()
				for k, i := range pending {
					settle = append(settle, written{gw: b[i], created: created[k]})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.awaitCache(ctx, settle)
	return outs, errs
}

// planBatch decides every network from the cache and builds one
// transaction with the writes of those that need any (pending), and says
// for each of them which port row it creates a group for (written.created).
func (s *session) planBatch(ctx context.Context, gws []Gateway, outs []Outcome, errs []error) (*txn, []int, []string) {
	t := &txn{}
	var pending []int
	var created []string
	for i, gw := range gws {
		if errs[i] != nil {
			continue
		}
		if errs[i] = gw.Validate(); errs[i] != nil {
			continue
		}
		v, err := s.view(ctx, gw.Network)
		if err != nil {
			errs[i] = fmt.Errorf("network %q: %w", gw.ID(), err)
			continue
		}
		p := decide(gw, v)
		outs[i] = p.outcome
		if !p.writes() {
			continue
		}
		t.prefix = fmt.Sprintf("n%d", i)
		if errs[i] = s.buildInto(t, gw, v, p); errs[i] == nil {
			pending = append(pending, i)
			created = append(created, p.created(v))
		}
	}
	return t, pending, created
}

// commitBatch sends t and reports whether it committed; when the server
// refuses it, each pending network is reconciled again on its own.
func (s *session) commitBatch(ctx context.Context, t *txn, pending []int, gws []Gateway, outs []Outcome, errs []error) bool {
	err := s.transact(ctx, t)
	switch {
	case err == nil:
		for _, i := range pending {
			outs[i].Changed = true
		}
		return true
	case errors.Is(err, ErrConflict):
		// The cache was behind the rows that refused the batch; catch up
		// before deciding each network again.
		if err := s.sync(ctx); err != nil {
			for _, i := range pending {
				errs[i] = fmt.Errorf("network %q: %w", gws[i].ID(), err)
			}
			return false
		}
		for _, i := range pending {
			outs[i], errs[i] = s.c.Reconcile(ctx, gws[i])
		}
	default:
		for _, i := range pending {
			errs[i] = fmt.Errorf("network %q: %w", gws[i].ID(), err)
		}
	}
	return false
}
