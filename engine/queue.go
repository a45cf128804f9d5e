package engine

import (
	"container/heap"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Key identifies an object in the queue: its namespace and name.
type Key = client.ObjectKey

// nudgeKey is never an object's key (names cannot be empty); nudge uses it.
var nudgeKey = Key{Namespace: "engine.pxsubstrate.io", Name: ""}

// nudgeDelay is far enough that the nudge entry never fires.
const nudgeDelay = 100 * 365 * 24 * time.Hour

// newQueue builds client-go's rate-limiting queue with two thin decorators
// that let tracker mirror which keys wait in the delaying layer. It also
// returns nudge, which wakes the delaying layer so that it moves every due key
// into the queue: with a fake clock, a clock step racing with the layer's own
// timer set-up can leave a due key waiting for the next wake-up.
func newQueue(c clock.WithTicker, limiter workqueue.TypedRateLimiter[Key], t *tracker) (workqueue.TypedRateLimitingInterface[Key], func()) {
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[Key]{Clock: c})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[Key]{
		Clock: c,
		Queue: trackedQueue{TypedInterface: base, t: t},
	})
	q := workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[Key]{
		Clock:         c,
		DelayingQueue: trackedDelaying{TypedDelayingInterface: delaying, t: t},
	})
	return q, func() { delaying.AddAfter(nudgeKey, nudgeDelay) }
}

// tracker mirrors the delaying queue's waiting set: for each key, the
// earliest time a delayed add will put it in the queue. Drain uses it to tell
// "nothing left" from "something is due but not yet moved into the queue".
type tracker struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	waiting map[Key]time.Time
	// times holds every (time, key) that was ever the earliest of its key
	// in waiting, earliest first; entries whose key left waiting or got an
	// earlier time are dropped when they reach the top. It answers "is any
	// key due" and "when is the next one" without a scan of every key.
	times  waitHeap
	direct map[Key]int
	// moving counts adds between leaving the tracker and entering the
	// queue; they count as due, so Drain never sees such a key nowhere.
	moving int
}

func newTracker(c clock.PassiveClock) *tracker {
	return &tracker{clock: c, waiting: map[Key]time.Time{}, direct: map[Key]int{}}
}

// delayed records AddAfter(k, d) with d > 0; like the delaying queue, it
// keeps the earliest time per key.
func (t *tracker) delayed(k Key, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := t.clock.Now().Add(d)
	if old, ok := t.waiting[k]; !ok || at.Before(old) {
		t.waiting[k] = at
		heap.Push(&t.times, waitEntry{at: at, key: k})
	}
}

// earliest returns the earliest time in waiting, dropping stale entries
// from the top of times. Callers hold t.mu.
func (t *tracker) earliest() (time.Time, bool) {
	for t.times.Len() > 0 {
		top := t.times[0]
		if at, ok := t.waiting[top.key]; ok && at.Equal(top.at) {
			return top.at, true
		}
		heap.Pop(&t.times)
	}
	return time.Time{}, false
}

// waitEntry is one key's time in tracker.times.
type waitEntry struct {
	at  time.Time
	key Key
}

// waitHeap is a min-heap of waitEntry by time (container/heap).
type waitHeap []waitEntry

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h waitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waitHeap) Push(x any)        { *h = append(*h, x.(waitEntry)) }
func (h *waitHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// immediate records an add that reaches the queue without waiting.
func (t *tracker) immediate(k Key) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.direct[k]++
}

// arrived is called for every add before it enters the queue (moved is
// called once it has); an add that was not announced as immediate is a
// delayed one firing. A delayed entry goes only when it is due: a plain Add
// leaves a later delayed add of the same key waiting.
func (t *tracker) arrived(k Key) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.moving++
	if n := t.direct[k]; n > 0 {
		if n == 1 {
			delete(t.direct, k)
		} else {
			t.direct[k] = n - 1
		}
		return
	}
	if at, ok := t.waiting[k]; ok && !at.After(t.clock.Now()) {
		delete(t.waiting, k)
	}
}

// moved is called when an add that arrived is in the queue.
func (t *tracker) moved() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.moving--
}

// due counts the adds on their way into the queue, plus one when a delayed
// key's time has come: zero means nothing is due. It costs O(log n) for n
// waiting keys (amortized over the stale entries it drops), not a scan.
func (t *tracker) due() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.moving
	if at, ok := t.earliest(); ok && !at.After(t.clock.Now()) {
		n++
	}
	return n
}

// takeDue removes and returns the delayed keys whose time has come. Drain
// calls it when such keys stay out of the queue: a CI run of the network
// state machine showed the tracker holding a due key that the delaying
// layer never fired, by a path not pinned down yet (plain adds are
// announced by Enqueue, so it is not those), and a due key must never
// wait for an entry the layer no longer has.
func (t *tracker) takeDue() []Key {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	var out []Key
	for k, at := range t.waiting {
		if !at.After(now) {
			out = append(out, k)
			delete(t.waiting, k)
		}
	}
	return out
}

// next returns the earliest time a delayed key becomes due.
func (t *tracker) next() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.earliest()
}

type trackedQueue struct {
	workqueue.TypedInterface[Key]
	t *tracker
}

// Add tells the tracker before k enters the queue, so that a worker that
// takes k and delays it again cannot be overtaken by the tracker forgetting
// the entry that fired; until k is in the queue it counts as due.
func (q trackedQueue) Add(k Key) {
	q.t.arrived(k)
	q.TypedInterface.Add(k)
	q.t.moved()
}

type trackedDelaying struct {
	workqueue.TypedDelayingInterface[Key]
	t *tracker
}

func (q trackedDelaying) AddAfter(k Key, d time.Duration) {
	if q.ShuttingDown() {
		return
	}
	if d > 0 {
		q.t.delayed(k, d)
	} else {
		q.t.immediate(k)
	}
	q.TypedDelayingInterface.AddAfter(k, d)
}
