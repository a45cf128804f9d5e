package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/reconcilers"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// Epoch is the simulated clock's start: 2100-01-01T00:00:00Z. The in-memory
// API stamps deletionTimestamp with the machine's real time, and a
// controller whose clock runs behind the API server's restarts its prune
// timers until it catches up, so the simulated clock starts ahead of any
// real one. Reports print deletion times on the simulated clock.
var Epoch = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrNotConverged says the simulation did not settle within its budget.
var ErrNotConverged = errors.New("simulation did not converge")

// Options configure a Harness. Every field is optional.
type Options struct {
	// SubnetPruneTimeout is the controller's --subnet-prune-timeout.
	SubnetPruneTimeout time.Duration
	// KubeOVNDoesNotPrune makes the simulated Kube-OVN keep deleted subnets
	// on their Vlan, so only the prune timeout releases the VLAN.
	KubeOVNDoesNotPrune bool
	// GatewayNB is the OVN northbound client of the controller's gateway,
	// and NBEvents what that client reports (its OnReconnect and
	// OnRouterPort): each controller instance then manages gateways as the
	// daemon does (package reconcilers: kubenetgateway over GatewayNB,
	// the reports taken on each Converge). Gateway builds any other
	// gateway of each instance (tests); with neither, network.Disabled.
	// With a gateway, a Node change re-reconciles the networks of the zones
	// whose provider network it concerns, as the controller's Node watch
	// does.
	GatewayNB kubenetgateway.NB
	NBEvents  *reconcilers.NBEvents
	Gateway   func() network.Gateway
	// Hypervisor checks the Proxmox nodes of zones with
	// spec.sdn.credentialsRef; nil checks none.
	Hypervisor network.Hypervisor
	// NB is the OVN northbound database the simulated Kube-OVN keeps router
	// ports in (see World); nil means there is none.
	NB RouterPorts
	// ControllerHooks wrap the controller's client (not the world's): count
	// its calls or fail them. They sit above the informer feed, so a write
	// they let through reaches the cache even when they then fail the call.
	ControllerHooks *interceptor.Funcs
	// MaxReconciles bounds one Converge; 0 means 100,000.
	MaxReconciles int
	// Metrics receives the controller's cozy_proxmox_* series (every
	// instance records on the same one); nil keeps unregistered ones.
	Metrics *network.Metrics
	// Recorder receives the Events the controller emits (every instance
	// records on the same one); nil emits none.
	Recorder events.EventRecorder
	// Store is the API the simulation runs on; nil means a new in-memory
	// fake. Pass a client of a real API server (envtest) to run the same
	// world and controller against it.
	Store client.WithWatch
	// Progress receives a line every second while a converge runs (time,
	// networks Ready, controller writes), and a last one when it ends;
	// nil prints nothing.
	Progress io.Writer
	// MaxFileBytes is the most read of the file an apply step names; a
	// larger one (or a device that never ends) is refused. 0 means
	// DefaultMaxFileBytes; the CLI passes its --max-input-size.
	MaxFileBytes int64
	// Workers is the controller's network.Config.Workers; 0 means 1, which
	// keeps a converge deterministic.
	Workers int
}

// Harness is a simulated cluster: an in-memory API, a fake clock, the World
// and one instance of the controller's reconcilers, assembled as the daemon
// assembles them (package reconcilers), which Restart replaces with a fresh
// one that keeps nothing but what the API holds. Every write, the world's
// and the controller's, reaches the controller at once, as through an
// informer without lag.
type Harness struct {
	opts   Options
	Clock  *clocktesting.FakeClock
	World  *World
	store  client.WithWatch
	client client.WithWatch
	target *target
	set    *reconcilers.Set
	logs   *LogBook
	// requests counts the controller's API calls; progress its networks
	// Ready.
	requests *kube.Requests
	progress *progress
	// watchErr holds what went wrong mapping Node changes to networks,
	// returned by the next Converge.
	watchErr []error
}

// target forwards what every write leaves to the current controller, and
// notes when, on the simulated clock, each object was first seen deleting.
type target struct {
	mu      sync.RWMutex
	c       network.Target
	clock   *clocktesting.FakeClock
	deleted map[string]time.Time
	// progress counts the networks Ready.
	progress *progress
	// nodes are the Nodes last seen, for onNode; nil when no one listens.
	nodes  map[string]*metav1.ObjectMeta
	onNode func(old, updated metav1.Object)
}

func (t *target) noteDeletion(o client.Object) {
	if o.GetDeletionTimestamp().IsZero() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := o.GetNamespace() + "/" + o.GetName() + "/" + string(o.GetUID())
	if _, ok := t.deleted[k]; !ok {
		t.deleted[k] = t.clock.Now()
	}
}

// deletedAt returns the simulated time o was first seen deleting.
func (t *target) deletedAt(namespace, name, uid string) (time.Time, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	at, ok := t.deleted[namespace+"/"+name+"/"+uid]
	return at, ok
}

func (t *target) set(c network.Target) { t.mu.Lock(); t.c = c; t.mu.Unlock() }

func (t *target) get() network.Target { t.mu.RLock(); defer t.mu.RUnlock(); return t.c }

func (t *target) Observe(o client.Object) {
	t.noteDeletion(o)
	t.progress.note(o, false)
	if c := t.get(); c != nil {
		c.Observe(o)
	}
	t.node(o, false)
}

func (t *target) Forget(o client.Object) {
	t.progress.note(o, true)
	if c := t.get(); c != nil {
		c.Forget(o)
	}
	t.node(o, true)
}

// node passes a Node change to onNode.
func (t *target) node(o client.Object, gone bool) {
	if t.onNode == nil || !isNode(o) {
		return
	}
	t.onNode(t.noteNode(o, gone))
}

// NewHarness returns a harness over an empty API; objects may be applied
// before Start.
func NewHarness(opts Options) *Harness {
	if opts.MaxReconciles == 0 {
		opts.MaxReconciles = 100000
	}
	clk := clocktesting.NewFakeClock(Epoch)
	prog := &progress{ready: map[client.ObjectKey]bool{}}
	h := &Harness{
		opts:     opts,
		Clock:    clk,
		World:    &World{PruneSubnets: !opts.KubeOVNDoesNotPrune, NB: opts.NB},
		target:   &target{clock: clk, deleted: map[string]time.Time{}, progress: prog},
		logs:     &LogBook{},
		requests: kube.NewRequests(),
		progress: prog,
	}
	h.store = opts.Store
	if h.store == nil {
		h.store = NewStore(true)
	}
	if opts.Gateway != nil || opts.GatewayNB != nil {
		h.target.nodes = map[string]*metav1.ObjectMeta{}
		h.target.onNode = func(old, updated metav1.Object) {
			h.nodeChanged(context.Background(), old, updated)
		}
	}
	h.client = interceptor.NewClient(h.store, network.Feed(h.target))
	return h
}

// NewStore returns an empty in-memory API for Options.Store. typedReads
// serves reads from typed copies, as a Harness does by default; without it
// every call goes through controller-runtime's fake client as it is, the
// way the simulator ran before, which benchmarks compare against.
func NewStore(typedReads bool) client.WithWatch {
	return kube.NewClient(kube.ClientOptions{Scheme: Scheme(), WithStatus: withStatus(), Typed: typedReads})
}

// Client writes and reads the simulated API as any other actor does; its
// writes reach the controller's cache.
func (h *Harness) Client() client.WithWatch { return h.client }

// SetHypervisor sets Options.Hypervisor before Start, for a checker that
// reads the world (a kubehypervisor.Hypervisor on Client).
func (h *Harness) SetHypervisor(hv network.Hypervisor) { h.opts.Hypervisor = hv }

// Store reads and writes the API without feeding the controller's cache.
func (h *Harness) Store() client.WithWatch { return h.store }

// Controller returns the running network controller (nil before Start).
func (h *Harness) Controller() *network.Controller {
	if h.set == nil {
		return nil
	}
	return h.set.Network()
}

// Writes counts the API writes of every controller instance so far.
func (h *Harness) Writes() int { return h.requests.Writes() }

// Logs returns the controller log lines of every instance so far.
func (h *Harness) Logs() *LogBook { return h.logs }

// Start assembles the controller's reconcilers (package reconcilers, as
// the daemon does), loads their cache from the API and enqueues every
// object. Calling it again is Restart.
func (h *Harness) Start(ctx context.Context) error {
	cfg := reconcilers.Config{
		Client: h.store, Feed: h.target, Wrap: h.wrap, Clock: h.Clock, Log: h.logs.Logger(), Recorder: h.opts.Recorder,
		Metrics: h.opts.Metrics, SubnetPruneTimeout: h.opts.SubnetPruneTimeout, Workers: h.opts.Workers, Resync: -1,
		Hypervisor: h.opts.Hypervisor, NB: h.opts.GatewayNB, NBEvents: h.opts.NBEvents,
	}
	if h.opts.Gateway != nil {
		cfg.Gateway = h.opts.Gateway()
	}
	set, err := reconcilers.New(cfg)
	if err != nil {
		return fmt.Errorf("cannot start the controller: %w", err)
	}
	h.target.set(nil)
	if err := set.Load(ctx); err != nil {
		return fmt.Errorf("cannot start the controller: %w", err)
	}
	h.target.set(set)
	h.set = set
	if err := set.Resync(ctx); err != nil {
		return fmt.Errorf("cannot start the controller: %w", err)
	}
	return nil
}

// wrap counts the controller's API calls and runs ControllerHooks around
// them, above the feed.
func (h *Harness) wrap(c client.WithWatch) client.Client {
	counted := interceptor.NewClient(c, h.requests.Funcs())
	if h.opts.ControllerHooks != nil {
		return interceptor.NewClient(counted, *h.opts.ControllerHooks)
	}
	return counted
}

// Restart drops the controller and everything it kept in memory (cache,
// allocators, queues) and starts a fresh one.
func (h *Harness) Restart(ctx context.Context) error { return h.Start(ctx) }

// Converge lets the world react and the controller reconcile until neither
// has anything left to do at the current simulated time. It returns the
// number of reconciles.
func (h *Harness) Converge(ctx context.Context) (int, error) {
	if h.set == nil {
		return 0, fmt.Errorf("cannot converge: the controller is not started")
	}
	defer h.reportProgress()()
	total := 0
	for round := 0; ; round++ {
		if err := h.takeWatchErr(); err != nil {
			return total, err
		}
		changed, err := h.World.React(ctx, h.client)
		if err != nil {
			return total, err
		}
		n, err := h.set.Drain(ctx, h.opts.MaxReconciles-total)
		total += n
		if err != nil {
			return total, fmt.Errorf("%w: %w", ErrNotConverged, err)
		}
		if n == 0 && !changed {
			return total, nil
		}
		if total >= h.opts.MaxReconciles || round > h.opts.MaxReconciles {
			return total, fmt.Errorf("%w after %d reconciles", ErrNotConverged, total)
		}
	}
}

// Advance moves the clock forward by d, stopping at every time a delayed
// reconcile becomes due to converge there, and converges at the end.
func (h *Harness) Advance(ctx context.Context, d time.Duration) (int, error) {
	end := h.Clock.Now().Add(d)
	total := 0
	for {
		n, err := h.Converge(ctx)
		total += n
		if err != nil {
			return total, err
		}
		next, ok := h.set.NextDue()
		if !ok || next.After(end) {
			break
		}
		if next.After(h.Clock.Now()) {
			h.Clock.SetTime(next)
		}
	}
	h.Clock.SetTime(end)
	n, err := h.Converge(ctx)
	return total + n, err
}

// LogBook keeps log lines.
type LogBook struct {
	mu    sync.Mutex
	lines []string
}

// Logger returns a logger writing to the book.
func (b *LogBook) Logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = append(b.lines, prefix+" "+args)
	}, funcr.Options{})
}

// Lines returns the lines so far.
func (b *LogBook) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}
