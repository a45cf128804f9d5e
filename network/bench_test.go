package network_test

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// zoneNetworks sizes the zone benchmarks: a smaller run to profile.
var zoneNetworks = flag.Int("zone-networks", 4094, "networks BenchmarkConvergeZone* converge in one zone (512-4094)")

// readMeter counts the objects a client reads from the API server: one per
// Get, one per item of a List; cached counts those read from informers
// (cacheFuncs). allocs counts the Vlans it creates, and marks records both
// counts so far at each allocation.
type readMeter struct {
	reads  atomic.Int64
	cached atomic.Int64
	mu     sync.Mutex
	marks  [][2]int64
	allocs int
}

func (m *readMeter) funcs() interceptor.Funcs {
	f := countReads(&m.reads)
	f.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		err := c.Create(ctx, obj, opts...)
		if _, isVlan := obj.(*kubeovnv1.Vlan); isVlan && err == nil {
			m.mu.Lock()
			m.allocs++
			m.marks = append(m.marks, [2]int64{m.reads.Load(), m.cached.Load()})
			m.mu.Unlock()
		}
		return err
	}
	return f
}

// cacheFuncs count the reads of a client that reads from informers.
func (m *readMeter) cacheFuncs() interceptor.Funcs { return countReads(&m.cached) }

func countReads(n *atomic.Int64) interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			n.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			err := c.List(ctx, list, opts...)
			if err == nil {
				n.Add(int64(meta.LenList(list)))
			}
			return err
		},
	}
}

// window is the API reads per allocation between allocation from and to.
func (m *readMeter) window(from, to int) float64 { return m.windowOf(0, from, to) }

// cacheWindow is window for the reads from informers.
func (m *readMeter) cacheWindow(from, to int) float64 { return m.windowOf(1, from, to) }

func (m *readMeter) windowOf(i, from, to int) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if to > len(m.marks) || from < 1 || to <= from {
		return 0
	}
	return float64(m.marks[to-1][i]-m.marks[from-1][i]) / float64(to-from)
}

// createMany creates objects with a few writers in parallel.
func createMany(b testing.TB, c client.Client, objs []client.Object) {
	b.Helper()
	var wg sync.WaitGroup
	work := make(chan client.Object)
	for range 8 {
		wg.Go(func() {
			for o := range work {
				if err := c.Create(context.Background(), o); err != nil {
					b.Errorf("create %s: %v", o.GetName(), err)
				}
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
}

// BenchmarkConvergeZoneAPIServer converges 4,094 networks of one zone
// against a real kube-apiserver the way the controller process runs:
// reads through controller-runtime informers, every write fed to the
// controller's cache, -zone-workers workers per runner (the binary's
// --workers default), Run on the real clock, while a simulated Kube-OVN
// reports each Subnet Ready once its Vlan exists. It measures the time from
// the start-up Load to every network Ready, the controller's API requests
// by verb and kind, and the objects it reads per allocation over the first
// 256 allocations and the last 256, from the API server and from the
// informers apart. The limit "reads stay constant as the zone fills" is
// checked on both.
//
// In the same run, sub-benchmark "previous" converges -previous-networks
// networks on a fresh API server the way the benchmark ran the controller
// before: one worker, every read uncached, Drain on a fake clock, Kube-OVN's
// Subnet reports delivered between drains. Reported: its time per network
// and the ratio against ours. A naive reconciler that lists the Vlans
// uncached on every allocation then allocates 256 IDs into an empty
// provider network and 256 into one holding 3,838 (its list returns every
// Vlan of the cluster). One iteration is the whole measurement
// (-benchtime=1x).
func BenchmarkConvergeZoneAPIServer(b *testing.B) {
	n := zoneSize(b)
	m := *previousNetworks
	if m < 1 || m > 4094 {
		b.Fatalf("-previous-networks %d: give 1 to 4094", m)
	}
	var previous float64
	b.Run("previous", func(b *testing.B) {
		_, store := startAPIServer(b)
		previous = convergePrevious(b, store, m)
	})
	b.Run("informers", func(b *testing.B) {
		cfg, store := startAPIServer(b)
		convergeZoneInformers(b, cfg, store, n, previous)
	})
}

// previousNetworks and zoneWorkers size BenchmarkConvergeZoneAPIServer.
var (
	previousNetworks = flag.Int("previous-networks", 512, "networks BenchmarkConvergeZoneAPIServer converges the previous way (one worker, uncached reads) for the ratio")
	zoneWorkers      = flag.Int("zone-workers", 8, "workers per runner in BenchmarkConvergeZoneAPIServer (the controller's --workers)")
)

func zoneSize(b *testing.B) int {
	n := *zoneNetworks
	if n < 512 || n > 4094 {
		b.Fatalf("-zone-networks %d: give 512 to 4094 (the zone's range is 1-4094 and two windows of 256 are measured)", n)
	}
	return n
}

// zoneObjects are a provider network, a zone of range 1-4094 and a
// namespace, all named prefix, and n networks in them.
func zoneObjects(b testing.TB, prefix string, n int) []client.Object {
	b.Helper()
	objs := []client.Object{sim.ProviderNetwork(prefix, true), sim.Zone(prefix, "vmbr1", prefix, "1-4094"), sim.Namespace(prefix, nil)}
	for i := range n {
		net, err := sim.Network(prefix, fmt.Sprintf("%s-s%d", prefix, i), prefix, "vpc-bench", fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256))
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, net...)
	}
	return objs
}

// convergeZoneInformers is BenchmarkConvergeZoneAPIServer's main run;
// previous is the time per network of sub-benchmark "previous".
func convergeZoneInformers(b *testing.B, cfg *rest.Config, store client.WithWatch, n int, previous float64) {
	b.StopTimer()
	for it := 0; it < b.N; it++ {
		prefix := fmt.Sprintf("bench-%d", it)
		createMany(b, store, zoneObjects(b, prefix, n))
		b.StartTimer()
		run := convergeInformers(b, cfg, store, prefix, n, *zoneWorkers, false)
		b.StopTimer()
		meter := run.meter
		if meter.allocs != n {
			b.Fatalf("%d allocations, want %d", meter.allocs, n)
		}
		if err := sim.VerifyInvariants(context.Background(), store); err != nil {
			b.Fatal(err)
		}
		naive := naiveWindows(b, store, it, n)
		ours := float64(run.took.Microseconds()) / float64(n) / 1000
		b.Logf("controller API requests, %d networks, %d workers (informers' lists and watches not counted):\n%s", n, *zoneWorkers, run.api.Table())
		b.ReportMetric(float64(run.api.Writes())/float64(n), "writes/network")
		counts := run.api.Counts()
		b.ReportMetric(float64(counts[kube.RequestKey{Verb: kube.VerbStatusUpdate, Kind: "ProxmoxNetwork"}])/float64(n), "status-writes/network")
		b.ReportMetric(float64(counts[kube.RequestKey{Verb: kube.VerbPatch, Kind: "Subnet"}])/float64(n), "subnet-patches/network")
		b.ReportMetric(float64(counts[kube.RequestKey{Verb: kube.VerbPatch, Kind: "Namespace"}]), "namespace-patches")
		b.ReportMetric(meter.window(1, 257), "api-reads/alloc@256")
		b.ReportMetric(meter.window(n-256, n), "api-reads/alloc@4094")
		b.ReportMetric(meter.cacheWindow(1, 257), "cache-reads/alloc@256")
		b.ReportMetric(meter.cacheWindow(n-256, n), "cache-reads/alloc@4094")
		b.ReportMetric(float64(meter.reads.Load()), "api-reads-total")
		b.ReportMetric(float64(meter.cached.Load()), "cache-reads-total")
		naive.report(b)
		b.ReportMetric(naive.last/max(meter.window(n-256, n), 1), "naive/ours-api-reads@4094")
		b.ReportMetric(run.took.Seconds(), "s-converge")
		b.ReportMetric(ours, "ms/network")
		if run.cpuKnown {
			b.ReportMetric(run.cpu.self.Seconds()*1000/float64(n), "cpu-ms/network-controller")
			b.ReportMetric(run.cpu.child("kube-apiserver").Seconds()*1000/float64(n), "cpu-ms/network-apiserver")
			b.ReportMetric(run.cpu.child("etcd").Seconds()*1000/float64(n), "cpu-ms/network-etcd")
		}
		b.ReportMetric(previous, "previous-ms/network")
		b.ReportMetric(previous/ours, "previous/ours")
	}
}

// convergePrevious converges m networks the way BenchmarkConvergeZoneAPIServer
// ran the controller before (one worker, uncached reads, Drain on a fake
// clock) and returns its time per network in milliseconds. Kube-OVN's
// Subnet reports reach the controller's cache between drains, as an
// informer would deliver them.
func convergePrevious(b *testing.B, store client.WithWatch, m int) float64 {
	ctx := context.Background()
	b.StopTimer()
	objs := zoneObjects(b, "previous", m)
	createMany(b, store, objs)
	ctrl, cache, reqs := uncachedController(b, store, &readMeter{})
	b.StartTimer()
	start := time.Now()
	if err := ctrl.Load(ctx); err != nil {
		b.Fatal(err)
	}
	resyncAndDrain(b, ctrl, 20*m)
	reportSubnetsReady(b, interceptor.NewClient(store, network.Feed(cache)), objs)
	if _, err := ctrl.Drain(ctx, 20*m); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	b.StopTimer()
	var nets v1alpha1.ProxmoxNetworkList
	if err := store.List(ctx, &nets, client.InNamespace("previous")); err != nil {
		b.Fatal(err)
	}
	for _, n := range nets.Items {
		if !meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady) {
			b.Fatalf("network %s is not Ready: %v", n.Name, n.Status.Conditions)
		}
	}
	ms := float64(took.Microseconds()) / float64(m) / 1000
	b.Logf("previous controller requests, %d networks:\n%s", m, reqs.Table())
	b.ReportMetric(float64(reqs.Writes())/float64(m), "writes/network")
	b.ReportMetric(ms, "ms/network")
	return ms
}

// uncachedController is the controller as the benchmarks ran it before it
// ran like the controller process: one worker, every read from store
// (counted by meter and by the returned requests), the controller's own
// writes fed to its cache, a fake clock, no resync.
func uncachedController(b testing.TB, store client.WithWatch, meter *readMeter) (*network.Controller, *network.Cache, *kube.Requests) {
	b.Helper()
	reqs := kube.NewRequests()
	counted := interceptor.NewClient(interceptor.NewClient(store, reqs.Funcs()), meter.funcs())
	cache := network.NewCache()
	ctrl, err := network.New(network.Config{
		Client: interceptor.NewClient(counted, network.Feed(cache)), APIReader: counted,
		Cache: cache, Clock: clocktesting.NewFakeClock(sim.Epoch), Resync: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	return ctrl, cache, reqs
}

// fedController is the controller on store behind hooks (the requests'
// counters, injected faults), its own writes fed to its cache, as the
// tests run it; cfg sets the rest (clock, resync, status interval,
// metrics). It returns the client the controller writes through.
func fedController(t testing.TB, store client.WithWatch, hooks interceptor.Funcs, cfg network.Config) (*network.Controller, client.WithWatch) {
	t.Helper()
	cache := network.NewCache()
	c := interceptor.NewClient(interceptor.NewClient(store, hooks), network.Feed(cache))
	cfg.Client, cfg.Cache = c, cache
	ctrl, err := network.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ctrl, c
}

// resyncAndDrain enqueues everything and drains the controller.
func resyncAndDrain(b testing.TB, ctrl *network.Controller, maxReconciles int) {
	b.Helper()
	ctx := context.Background()
	if err := ctrl.Resync(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := ctrl.Drain(ctx, maxReconciles); err != nil {
		b.Fatal(err)
	}
}

// reportSubnetsReady reports the Subnets among objs Validated and Ready,
// as Kube-OVN does once their Vlans exist, with a few writers in parallel.
func reportSubnetsReady(b testing.TB, c client.Client, objs []client.Object) {
	b.Helper()
	var wg sync.WaitGroup
	work := make(chan *kubeovnv1.Subnet)
	for range 8 {
		wg.Go(func() {
			for s := range work {
				if err := c.Status().Patch(context.Background(), s, subnetReady); err != nil {
					b.Errorf("report Subnet %s Ready: %v", s.Name, err)
				}
			}
		})
	}
	for _, o := range objs {
		if s, ok := o.(*kubeovnv1.Subnet); ok {
			work <- &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}
		}
	}
	close(work)
	wg.Wait()
}

// subnetReady is the status patch Kube-OVN's report amounts to.
var subnetReady = client.RawPatch(types.MergePatchType,
	[]byte(`{"status":{"conditions":[{"type":"Validated","status":"True"},{"type":"Ready","status":"True"}]}}`))

// BenchmarkConvergeZoneFake counts the reads of converging 4,094 networks of
// one zone on the fake API, one worker and every read uncached (the way
// BenchmarkConvergeZoneAPIServer's "previous" runs): the read counts can be
// checked on any machine (the times say little). Subnets are left without
// Kube-OVN's report, so each network stops at SubnetNotReady.
func BenchmarkConvergeZoneFake(b *testing.B) {
	convergeZone(b, kube.NewClient(kube.ClientOptions{Scheme: sim.Scheme(), WithStatus: []client.Object{
		&v1alpha1.ProxmoxNetwork{}, &v1alpha1.ProxmoxNetworkZone{},
	}}))
}

// convergeZone converges 4,094 networks of one zone on store, uncached,
// and reports the reads; see BenchmarkConvergeZoneFake.
func convergeZone(b *testing.B, store client.WithWatch) {
	n := zoneSize(b)
	ctx := context.Background()
	b.StopTimer()
	for it := 0; it < b.N; it++ {
		prefix := fmt.Sprintf("bench-%d", it)
		createMany(b, store, zoneObjects(b, prefix, n))
		meter := &readMeter{}
		ctrl, _, reqs := uncachedController(b, store, meter)
		b.StartTimer()
		start := time.Now()
		if err := ctrl.Load(ctx); err != nil {
			b.Fatal(err)
		}
		loadReads := meter.reads.Load()
		resyncAndDrain(b, ctrl, 20*n)
		took := time.Since(start)
		b.StopTimer()
		if meter.allocs != n {
			b.Fatalf("%d allocations, want %d", meter.allocs, n)
		}
		first, last := meter.window(1, 257), meter.window(n-256, n)
		naive := naiveWindows(b, store, it, n)
		b.Logf("controller requests, %d networks:\n%s", n, reqs.Table())
		b.ReportMetric(float64(reqs.Writes())/float64(n), "writes/network")
		b.ReportMetric(first, "reads/alloc@256")
		b.ReportMetric(last, "reads/alloc@4094")
		naive.report(b)
		b.ReportMetric(naive.last/last, "naive/ours-reads@4094")
		b.ReportMetric(float64(meter.reads.Load()), "reads-total")
		b.ReportMetric(float64(loadReads), "reads-load")
		b.ReportMetric(took.Seconds(), "s-converge")
		b.ReportMetric(float64(took.Microseconds())/float64(n)/1000, "ms/network")
	}
}

// naiveRun is what the naive reconciler read and took per allocation into
// an empty provider network (first) and a nearly full one (last).
type naiveRun struct {
	first, last         float64
	firstTook, lastTook time.Duration
}

func (r naiveRun) report(b *testing.B) {
	b.ReportMetric(r.first, "naive-reads/alloc@256")
	b.ReportMetric(r.last, "naive-reads/alloc@4094")
	b.ReportMetric(float64(r.firstTook.Microseconds())/256/1000, "naive-ms/alloc@256")
	b.ReportMetric(float64(r.lastTook.Microseconds())/256/1000, "naive-ms/alloc@4094")
}

// naiveWindows allocates 256 IDs with sim.NaiveAllocate into an empty
// provider network, fills it up to n-256 Vlans and allocates 256 more.
func naiveWindows(b *testing.B, store client.WithWatch, it, n int) naiveRun {
	ctx := context.Background()
	naive := &readMeter{}
	nc := interceptor.NewClient(store, naive.funcs())
	np := fmt.Sprintf("pxn%d", it)
	var r naiveRun
	start := time.Now()
	for i := range 256 {
		if err := sim.NaiveAllocate(ctx, nc, np, fmt.Sprintf("naive%d-a%d", it, i)); err != nil {
			b.Fatal(err)
		}
	}
	r.firstTook = time.Since(start)
	var fill []client.Object
	for i := 256; i < n-256; i++ {
		fill = append(fill, &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("naive%d-f%d", it, i)}, Spec: kubeovnv1.VlanSpec{ID: i + 1, Provider: np}})
	}
	createMany(b, store, fill)
	base := naive.allocs
	start = time.Now()
	for i := range 256 {
		if err := sim.NaiveAllocate(ctx, nc, np, fmt.Sprintf("naive%d-z%d", it, i)); err != nil {
			b.Fatal(err)
		}
	}
	r.lastTook = time.Since(start)
	r.first, r.last = naive.window(1, 256), naive.window(base+1, base+256)
	return r
}
