package engine

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Drain reconciles queued keys, with the runner's workers, until the queue is
// empty, no worker is busy and no delayed key (RequeueAfter or error backoff)
// is due on the runner's clock. It returns how many reconciles it ran. Keys
// due later stay where they are: with a fake clock, step the clock to
// NextDue and Drain again; this is how simulators converge deterministically
// (with one worker, the order is deterministic too). Drain fails with
// ErrNotConverged after maxReconciles reconciles. It must not be called while
// Run or another Drain runs.
func (r *Runner[T]) Drain(ctx context.Context, maxReconciles int) (int, error) {
	if r.started.Load() {
		return 0, fmt.Errorf("cannot drain %s: Run owns its queue", r.name)
	}
	d := &drain{max: maxReconciles}
	d.cond = sync.NewCond(&d.mu)
	var wg sync.WaitGroup
	for range r.opts.workers {
		wg.Go(func() {
			for {
				key, ok := d.take(ctx, r)
				if !ok {
					return
				}
				r.process(ctx, key)
				d.finish()
			}
		})
	}
	wg.Wait()
	return d.count, d.err
}

// NextDue returns the earliest time a delayed key (RequeueAfter or error
// backoff) becomes due, and false when no key is waiting.
func (r *Runner[T]) NextDue() (time.Time, bool) {
	return r.track.next()
}

type drain struct {
	mu     sync.Mutex
	cond   *sync.Cond
	max    int
	count  int
	active int
	stop   bool
	err    error
}

// take hands out the next key, or reports that draining is over. Only
// drain workers call Get, always under d.mu and only when the queue holds a
// key, so Get never blocks. When the queue is empty and no worker is busy,
// the delayed keys due on the runner's clock move into the queue; when none
// is due, draining is over.
func (d *drain) take(ctx context.Context, r queueView) (Key, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		switch {
		case d.stop:
			return Key{}, false
		case ctx.Err() != nil:
			return Key{}, d.end(fmt.Errorf("cannot drain %s: %w", r.Name(), ctx.Err()))
		case r.queueLen() > 0:
			if d.count >= d.max {
				return Key{}, d.end(fmt.Errorf("cannot drain %s after %d reconciles: %w", r.Name(), d.count, ErrNotConverged))
			}
			key, _ := r.get()
			d.count++
			d.active++
			return key, true
		case d.active > 0:
			d.cond.Wait()
		case r.moveDue() == 0:
			return Key{}, d.end(nil)
		}
	}
}

// end stops every worker with err (nil for a clean finish).
func (d *drain) end(err error) bool {
	d.stop, d.err = true, err
	d.cond.Broadcast()
	return false
}

func (d *drain) finish() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active--
	d.cond.Broadcast()
}

// queueView is what drain needs from a Runner.
type queueView interface {
	Name() string
	queueLen() int
	get() (Key, bool)
	moveDue() int
}

func (r *Runner[T]) queueLen() int    { return r.queue.Len() }
func (r *Runner[T]) get() (Key, bool) { return r.queue.Get() }

// moveDue adds the delayed keys due on the runner's clock to the queue,
// earliest first, and returns how many it added.
func (r *Runner[T]) moveDue() int {
	keys := r.track.takeDue()
	for _, k := range keys {
		r.queue.Add(k)
	}
	return len(keys)
}

// DrainAll drains several runners (their Drain, or anything that drains as
// Drain does) in turn, in rounds, until a whole round reconciles nothing:
// a reconcile of one may enqueue keys on another. It returns how many
// reconciles ran, and fails with ErrNotConverged after maxReconciles.
func DrainAll(ctx context.Context, maxReconciles int, drains ...func(context.Context, int) (int, error)) (int, error) {
	total := 0
	for {
		round := 0
		for _, d := range drains {
			n, err := d(ctx, maxReconciles-total)
			round += n
			total += n
			if err != nil {
				return total, err
			}
		}
		if round == 0 {
			return total, nil
		}
	}
}

// FirstDue is the earliest of the times the runners' NextDue report, and
// false when none has a key waiting.
func FirstDue(dues ...func() (time.Time, bool)) (time.Time, bool) {
	var first time.Time
	for _, f := range dues {
		if t, ok := f(); ok && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first, !first.IsZero()
}
