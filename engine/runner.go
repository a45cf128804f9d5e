package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Runner drives a Step over every object of one kind. See the package
// documentation for its behaviour. A Runner runs once: after Run returns,
// build a new one.
type Runner[T client.Object] struct {
	name      string
	client    client.Client
	newObject func() T
	newList   func() client.ObjectList
	step      Step[T]
	status    statusAccess
	opts      options

	queue   workqueue.TypedRateLimitingInterface[Key]
	delay   *delayer
	track   *tracker
	metrics *metrics
	started atomic.Bool
}

// NewRunner returns a Runner that reconciles objects made by newObject (a
// pointer to an empty object of the kind, registered in c's scheme) with
// step. Status is written back only when the step changed it, for types that
// have a Status field; the type needs a status subresource then.
func NewRunner[T client.Object](c client.Client, newObject func() T, step Step[T], opts ...Option) (*Runner[T], error) {
	if c == nil || newObject == nil || step == nil {
		return nil, fmt.Errorf("cannot create runner: client, newObject and step are required: %w", ErrInvalidOption)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("cannot create runner: %w", err)
		}
	}
	if v, ok := step.(Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("cannot create runner: %w", err)
		}
	}
	sample := newObject()
	newList, kind, err := listFactory(c, sample)
	if err != nil {
		return nil, fmt.Errorf("cannot create runner: %w", err)
	}
	if o.name == "" {
		o.name = strings.ToLower(kind)
	}
	if o.limiter == nil {
		o.limiter = workqueue.NewTypedItemExponentialFailureRateLimiter[Key](5*time.Millisecond, 1000*time.Second)
	}
	r := &Runner[T]{
		name: o.name, client: c, newObject: newObject, newList: newList,
		step: step, status: newStatusAccess(sample), opts: o,
		track: newTracker(o.clock),
	}
	r.queue, r.delay = newQueue(o.clock, o.limiter, r.track)
	if r.metrics, err = newMetrics(o.name, o.registerer, func() float64 { return float64(r.queue.Len()) }); err != nil {
		return nil, fmt.Errorf("cannot create runner: %w", err)
	}
	return r, nil
}

// listFactory finds the list type of obj's kind in c's scheme.
func listFactory(c client.Client, obj client.Object) (func() client.ObjectList, string, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return nil, "", fmt.Errorf("cannot find the kind of %T in the client's scheme: %w", obj, err)
	}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(listGVK)
			return l
		}, gvk.Kind, nil
	}
	sample, err := c.Scheme().New(listGVK)
	if err != nil {
		return nil, "", fmt.Errorf("cannot find %s in the client's scheme (register the list type too): %w", listGVK.Kind, err)
	}
	if _, ok := sample.(client.ObjectList); !ok {
		return nil, "", fmt.Errorf("cannot list %s: %T is not a list", gvk.Kind, sample)
	}
	return func() client.ObjectList { return sample.DeepCopyObject().(client.ObjectList) }, gvk.Kind, nil
}

func listObjects(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	err := meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("list item %T is not an object", o)
		}
		out = append(out, obj)
		return nil
	})
	return out, err
}

// Name is the runner's name in logs and metrics.
func (r *Runner[T]) Name() string { return r.name }

// Enqueue asks for key to be reconciled. It is safe to call at any time,
// from any goroutine; a key already waiting is not queued twice.
func (r *Runner[T]) Enqueue(key Key) {
	r.queue.Add(key)
}

// Resync lists every object of the kind and enqueues it.
func (r *Runner[T]) Resync(ctx context.Context) error {
	list := r.newList()
	if err := r.client.List(ctx, list); err != nil {
		return fmt.Errorf("cannot list objects of %s: %w", r.name, err)
	}
	items, err := listObjects(list)
	if err != nil {
		return fmt.Errorf("cannot list objects of %s: %w", r.name, err)
	}
	for _, o := range items {
		r.Enqueue(client.ObjectKeyFromObject(o))
	}
	return nil
}

// Run reconciles until ctx is cancelled: it resyncs at once and then every
// resync period (unless the period is 0), and runs the workers. On cancel, workers finish the key in
// hand, the queue shuts down and Run returns nil. Run can be called once; it
// also serves as a controller-runtime Manager Runnable through Start.
func (r *Runner[T]) Run(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return fmt.Errorf("cannot run %s: it already ran; build a new runner", r.name)
	}
	r.delay.handOver()
	var wg sync.WaitGroup
	for range r.opts.workers {
		wg.Go(func() {
			for r.next(ctx) {
			}
		})
	}
	wg.Go(func() { r.resyncLoop(ctx) })
	<-ctx.Done()
	r.queue.ShutDown()
	wg.Wait()
	return nil
}

// Start is Run, so a Runner can be added to a controller-runtime Manager.
func (r *Runner[T]) Start(ctx context.Context) error { return r.Run(ctx) }

// NeedLeaderElection tells a controller-runtime Manager to run the Runner
// only while it leads.
func (r *Runner[T]) NeedLeaderElection() bool { return true }

func (r *Runner[T]) resyncLoop(ctx context.Context) {
	if r.opts.resync <= 0 {
		return
	}
	r.resyncOnce(ctx)
	t := r.opts.clock.NewTicker(r.opts.resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			r.resyncOnce(ctx)
		}
	}
}

func (r *Runner[T]) resyncOnce(ctx context.Context) {
	if err := r.Resync(ctx); err != nil && ctx.Err() == nil {
		r.logger(ctx).Error(err, "resync failed; the next one retries")
	}
}

// next takes one key from the queue and reconciles it; false means stop.
func (r *Runner[T]) next(ctx context.Context) bool {
	key, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	if ctx.Err() != nil {
		r.queue.Done(key)
		return false
	}
	r.process(ctx, key)
	return true
}

// process reconciles a key taken from the queue, then applies the
// Done/Forget discipline: error -> AddRateLimited unless terminal;
// RequeueAfter -> Forget and AddAfter; success -> Forget.
func (r *Runner[T]) process(ctx context.Context, key Key) {
	defer r.queue.Done(key)
	start := time.Now()
	res, err := r.ReconcileKey(ctx, key)
	outcome := OutcomeSuccess
	switch {
	case err != nil && IsTerminal(err):
		outcome = OutcomeTerminal
		r.queue.Forget(key)
		r.logger(ctx).Error(err, "reconcile failed; not retrying", "object", key.String())
	case err != nil:
		outcome = OutcomeError
		r.queue.AddRateLimited(key)
		var p *PanicError
		switch {
		case errors.As(err, &p):
			outcome = OutcomePanic
			r.logger(ctx).Error(err, "reconcile panicked; retrying", "object", key.String(), "stack", string(p.Stack))
		case apierrors.IsConflict(err) || ctx.Err() != nil:
			r.logger(ctx).V(1).Info("reconcile interrupted; retrying", "object", key.String(), "error", err.Error())
		default:
			r.logger(ctx).Error(err, "reconcile failed; retrying", "object", key.String())
		}
	case res.RequeueAfter > 0:
		outcome = OutcomeRequeue
		r.queue.Forget(key)
		r.queue.AddAfter(key, res.RequeueAfter)
	default:
		r.queue.Forget(key)
	}
	r.metrics.observe(outcome, ReasonOf(err), time.Since(start))
}

// ReconcileKey reconciles one object now, outside the queue, and returns what
// the step returned (ErrHalt becomes success). A missing object is not an
// error: there is nothing left to do. Panics in the step come back as *PanicError.
func (r *Runner[T]) ReconcileKey(ctx context.Context, key Key) (res Result, err error) {
	obj := r.newObject()
	if err := r.client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return Result{}, nil
		}
		return Result{}, fmt.Errorf("cannot get %s %s: %w", r.name, key, err)
	}
	before, ok := obj.DeepCopyObject().(T)
	if !ok {
		return Result{}, Terminal(fmt.Errorf("cannot copy %T: DeepCopyObject returned another type", obj))
	}
	log := r.logger(ctx).WithValues("object", key.String())
	s := &State[T]{Object: obj, Client: r.client, Clock: r.opts.clock, Log: log, Recorder: r.opts.recorder}
	res, err = r.runStep(logr.NewContext(ctx, log), s)
	var p *PanicError
	if errors.As(err, &p) {
		return Result{}, err
	}
	if errors.Is(err, ErrHalt) {
		err = nil
	}
	if r.status.changed(before, s.Object) {
		if s.hold > 0 && err == nil {
			return res.Merge(Result{RequeueAfter: s.hold}), nil
		}
		if serr := r.client.Status().Update(ctx, s.Object); serr != nil && !apierrors.IsNotFound(serr) {
			return Result{}, fmt.Errorf("cannot update status of %s %s: %w", r.name, key, serr)
		}
	}
	return res, err
}

func (r *Runner[T]) runStep(ctx context.Context, s *State[T]) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = Result{}, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return r.step.Reconcile(ctx, s)
}

func (r *Runner[T]) logger(ctx context.Context) logr.Logger {
	base := logr.FromContextOrDiscard(ctx)
	if r.opts.log != nil {
		base = *r.opts.log
	}
	return base.WithValues("controller", r.name)
}
