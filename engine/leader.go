package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeaderLost says RunElected returned because the lease was lost.
var ErrLeaderLost = errors.New("leader election lost")

// Defaults of LeaderElection, the usual Kubernetes controller values.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Runnable is anything RunElected can run while it leads; *Runner is one.
// Run must return soon after ctx is cancelled.
type Runnable interface {
	Run(ctx context.Context) error
}

// LeaderElection configures RunElected.
type LeaderElection struct {
	// Lock is the lease to hold, usually from NewLeaseLock.
	Lock resourcelock.Interface
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's; zero
	// values take the defaults above.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// NewLeaseLock returns a coordination.k8s.io Lease lock namespace/name held
// under identity (unique per process, e.g. the pod name).
func NewLeaseLock(cs kubernetes.Interface, namespace, name, identity string) (*resourcelock.LeaseLock, error) {
	if cs == nil || namespace == "" || name == "" || identity == "" {
		return nil, fmt.Errorf("cannot build a lease lock: clientset, namespace, name and identity are required: %w", ErrInvalidOption)
	}
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}, nil
}

// RunElected campaigns for the lease and, while it holds it, runs every
// runnable; only the leader runs steps.
//
//   - ctx cancelled: the runnables are stopped (workers finish the key in
//     hand), then the lease is released so another replica takes over at
//     once, and RunElected returns nil.
//   - Lease lost (not renewed within RenewDeadline): the runnables' context
//     is cancelled at that moment, RunElected waits for them to stop and
//     returns ErrLeaderLost. Runners run once, so the process is expected to
//     exit (and restart), as Kubernetes controllers do.
//   - A runnable fails: the others are stopped, the lease is released and
//     its error is returned.
func RunElected(ctx context.Context, le LeaderElection, runs ...Runnable) error {
	// The elector gets its own context, cancelled only once the runnables
	// have stopped, so the lease is never released while a step runs.
	ectx, ecancel := context.WithCancel(context.WithoutCancel(ctx))
	defer ecancel()
	e := &election{parent: ctx, runs: runs, stopElector: ecancel, done: make(chan struct{})}
	stopCampaign := context.AfterFunc(ctx, e.parentDone)
	defer stopCampaign()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            le.Lock,
		LeaseDuration:   orDefault(le.LeaseDuration, DefaultLeaseDuration),
		RenewDeadline:   orDefault(le.RenewDeadline, DefaultRenewDeadline),
		RetryPeriod:     orDefault(le.RetryPeriod, DefaultRetryPeriod),
		ReleaseOnCancel: true,
		Callbacks:       leaderelection.LeaderCallbacks{OnStartedLeading: e.lead, OnStoppedLeading: func() {}},
	})
	if err != nil {
		return fmt.Errorf("cannot start leader election: %w", err)
	}
	elector.Run(ectx)
	led, runErr := e.wait()
	switch {
	case !led:
		return nil
	case runErr != nil:
		return runErr
	case ctx.Err() != nil:
		return nil
	default:
		return fmt.Errorf("cannot keep running: lease %s: %w", le.Lock.Describe(), ErrLeaderLost)
	}
}

// election is the state RunElected shares with the elector's callbacks.
type election struct {
	parent      context.Context
	runs        []Runnable
	stopElector context.CancelFunc
	done        chan struct{}

	mu      sync.Mutex
	leading bool
	closed  bool // RunElected returned without leading: never start
	runErr  error
}

// parentDone stops the campaign of a replica that does not lead; a leader
// stops its runnables first (see lead).
func (e *election) parentDone() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading {
		e.stopElector()
	}
}

// lead runs the runnables until the lease is lost (lctx ends) or the parent
// context ends, then lets the elector release the lease.
func (e *election) lead(lctx context.Context) {
	defer close(e.done)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.leading = true
	e.mu.Unlock()
	rctx, rcancel := context.WithCancel(lctx)
	defer rcancel()
	stop := context.AfterFunc(e.parent, rcancel)
	defer stop()
	err := runAll(rctx, e.runs)
	e.mu.Lock()
	e.runErr = err
	e.mu.Unlock()
	e.stopElector()
}

// wait returns whether this replica led and, if so, waits for its runnables
// to stop and returns their error.
func (e *election) wait() (bool, error) {
	e.mu.Lock()
	led := e.leading
	e.closed = !led
	e.mu.Unlock()
	if !led {
		return false, nil
	}
	<-e.done
	e.mu.Lock()
	defer e.mu.Unlock()
	return true, e.runErr
}

// runAll runs every runnable until ctx ends or one fails; then it stops the
// others and waits for them.
func runAll(ctx context.Context, runs []Runnable) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			if err := r.Run(ctx); err != nil {
				errs[i] = err
				cancel()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
