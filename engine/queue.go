package engine

import (
	"cmp"
	"container/heap"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Key identifies an object in the queue: its namespace and name.
type Key = client.ObjectKey

// newQueue builds client-go's rate-limiting queue over a delaying layer
// that hands each delayed add (RequeueAfter, error backoff) to t until Run
// starts: Drain moves due keys from t into the queue itself, on the
// runner's clock, so a fake clock needs no timer to fire. Once Run calls
// handOver, delayed adds go to client-go's delaying queue, which fires them
// on its own timers.
func newQueue(c clock.WithTicker, limiter workqueue.TypedRateLimiter[Key], t *tracker) (workqueue.TypedRateLimitingInterface[Key], *delayer) {
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[Key]{Clock: c})
	d := &delayer{
		TypedDelayingInterface: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[Key]{Clock: c, Queue: base}),
		t:                      t,
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[Key]{
		Clock:         c,
		DelayingQueue: d,
	})
	return q, d
}

// delayer is client-go's delaying queue whose delayed adds the tracker
// holds until Run starts.
type delayer struct {
	workqueue.TypedDelayingInterface[Key]
	t *tracker
}

// AddAfter adds k now when d is not positive; otherwise the tracker keeps
// it, or client-go's delaying queue once Run has started.
func (q *delayer) AddAfter(k Key, d time.Duration) {
	if q.ShuttingDown() {
		return
	}
	if d > 0 && q.t.delayed(k, d) {
		return
	}
	q.TypedDelayingInterface.AddAfter(k, d)
}

// handOver gives every key the tracker holds to client-go's delaying queue,
// with the time it has left, and sends later delayed adds there too.
func (q *delayer) handOver() {
	now, waiting := q.t.handOver()
	for _, e := range waiting {
		q.TypedDelayingInterface.AddAfter(e.key, e.at.Sub(now))
	}
}

// tracker holds the delayed keys of a runner that does not run: for each
// key, the earliest time a delayed add asked for, like client-go's delaying
// queue keeps it. Drain moves the due ones into the queue and NextDue
// reports the earliest.
type tracker struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	waiting map[Key]time.Time
	// times holds every (time, key) that was ever the earliest of its key
	// in waiting, earliest first; entries whose key left waiting or got an
	// earlier time are dropped when they reach the top. It answers "is any
	// key due" and "when is the next one" without a scan of every key.
	times waitHeap
	// live is set when Run took the delayed keys over.
	live bool
}

func newTracker(c clock.PassiveClock) *tracker {
	return &tracker{clock: c, waiting: map[Key]time.Time{}}
}

// delayed records AddAfter(k, d) with d > 0, keeping the earliest time per
// key, and reports true; false, recording nothing, once Run took the
// delayed keys over.
func (t *tracker) delayed(k Key, d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live {
		return false
	}
	at := t.clock.Now().Add(d)
	if old, ok := t.waiting[k]; !ok || at.Before(old) {
		t.waiting[k] = at
		heap.Push(&t.times, waitEntry{at: at, key: k})
	}
	return true
}

// earliest returns the earliest entry in waiting, dropping stale entries
// from the top of times. Callers hold t.mu.
func (t *tracker) earliest() (waitEntry, bool) {
	for t.times.Len() > 0 {
		top := t.times[0]
		if at, ok := t.waiting[top.key]; ok && at.Equal(top.at) {
			return top, true
		}
		heap.Pop(&t.times)
	}
	return waitEntry{}, false
}

// waitEntry is one key's time in tracker.times.
type waitEntry struct {
	at  time.Time
	key Key
}

// waitHeap is a min-heap of waitEntry by time, then key (container/heap):
// keys due at the same time leave in the order of their names.
type waitHeap []waitEntry

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if c := h[i].at.Compare(h[j].at); c != 0 {
		return c < 0
	}
	return cmp.Or(cmp.Compare(h[i].key.Namespace, h[j].key.Namespace), cmp.Compare(h[i].key.Name, h[j].key.Name)) < 0
}
func (h waitHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *waitHeap) Push(x any)   { *h = append(*h, x.(waitEntry)) }
func (h *waitHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// takeDue removes and returns the keys whose time has come, earliest
// first. It costs O(log n) per key for n waiting keys (amortized over the
// stale entries it drops), not a scan.
func (t *tracker) takeDue() []Key {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	var out []Key
	for {
		e, ok := t.earliest()
		if !ok || e.at.After(now) {
			return out
		}
		heap.Pop(&t.times)
		delete(t.waiting, e.key)
		out = append(out, e.key)
	}
}

// next returns the earliest time a delayed key becomes due.
func (t *tracker) next() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.earliest()
	return e.at, ok
}

// handOver empties the tracker and returns what it held, earliest first,
// with the time of the hand-over; later delayed adds are not recorded.
func (t *tracker) handOver() (time.Time, []waitEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live = true
	var out []waitEntry
	for {
		e, ok := t.earliest()
		if !ok {
			break
		}
		heap.Pop(&t.times)
		delete(t.waiting, e.key)
		out = append(out, e)
	}
	return t.clock.Now(), out
}
