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
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fakes/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// zoneNetworks sizes the zone benchmarks: a smaller run to profile.
var zoneNetworks = flag.Int("zone-networks", 4094, "networks BenchmarkConvergeZone* converge in one zone (512-4094)")

// readMeter counts the objects a client reads from the API server: one per
// Get, one per item of a List. allocs counts the Vlans it creates, and
// marks records the reads so far at each allocation.
type readMeter struct {
	reads  atomic.Int64
	mu     sync.Mutex
	marks  []int64
	allocs int
}

func (m *readMeter) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			m.reads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			err := c.List(ctx, list, opts...)
			if err == nil {
				m.reads.Add(int64(meta.LenList(list)))
			}
			return err
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			if _, isVlan := obj.(*kubeovnv1.Vlan); isVlan && err == nil {
				m.mu.Lock()
				m.allocs++
				m.marks = append(m.marks, m.reads.Load())
				m.mu.Unlock()
			}
			return err
		},
	}
}

// window is the reads per allocation between allocation from and to.
func (m *readMeter) window(from, to int) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if to > len(m.marks) || from < 1 || to <= from {
		return 0
	}
	return float64(m.marks[to-1]-m.marks[from-1]) / float64(to-from)
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

// naiveAllocate is the reconciler the index replaces: it lists every Vlan
// BenchmarkConvergeZoneAPIServer converges 4,094 networks of one zone
// through the reconcilers against a real kube-apiserver and counts the
// objects the controller reads from it per allocation, for the first 256
// allocations and the last 256. In the same run, a naive reconciler that
// lists the Vlans uncached on every allocation allocates 256 IDs into an
// empty provider network and 256 into one holding 3,838. The naive list
// returns every Vlan of the cluster, so its reads per allocation are the
// cluster's Vlan count (our 4,094 included): 4,094 + its own at the first
// window, 8,060 or so at the second. Reported: reads/alloc of both at both
// fill levels, the ratio at 4,094, total reads and seconds. One iteration
// is the whole measurement (-benchtime=1x).
func BenchmarkConvergeZoneAPIServer(b *testing.B) {
	_, store := startAPIServer(b)
	convergeZone(b, store)
}

// BenchmarkConvergeZoneFake is BenchmarkConvergeZoneAPIServer on the fake
// API: the same reads are counted without a kube-apiserver, so the read
// counts can be checked on any machine (the times say little).
func BenchmarkConvergeZoneFake(b *testing.B) {
	convergeZone(b, kube.NewClient(kube.ClientOptions{Scheme: sim.Scheme(), WithStatus: []client.Object{
		&v1alpha1.ProxmoxNetwork{}, &v1alpha1.ProxmoxNetworkZone{},
	}}))
}

// convergeZone converges 4,094 networks of one zone on store and reports
// the reads; see BenchmarkConvergeZoneAPIServer.
func convergeZone(b *testing.B, store client.WithWatch) {
	n := *zoneNetworks
	if n < 512 || n > 4094 {
		b.Fatalf("-zone-networks %d: give 512 to 4094 (the zone's range is 1-4094 and two windows of 256 are measured)", n)
	}
	ctx := context.Background()
	b.StopTimer()
	for it := 0; it < b.N; it++ {
		provider, zone, ns := fmt.Sprintf("pxb%d", it), fmt.Sprintf("bench-%d", it), fmt.Sprintf("bench-%d", it)
		objs := []client.Object{sim.ProviderNetwork(provider, true), sim.Zone(zone, "vmbr1", provider, "1-4094"), sim.Namespace(ns, nil)}
		for i := range n {
			net, err := sim.Network(ns, fmt.Sprintf("b%d-s%d", it, i), zone, "vpc-bench", fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256))
			if err != nil {
				b.Fatal(err)
			}
			objs = append(objs, net...)
		}
		createMany(b, store, objs)

		meter := &readMeter{}
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
		b.StartTimer()
		start := time.Now()
		if err := ctrl.Load(ctx); err != nil {
			b.Fatal(err)
		}
		loadReads := meter.reads.Load()
		if err := ctrl.Resync(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := ctrl.Drain(ctx, 20*n); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		if meter.allocs != n {
			b.Fatalf("%d allocations, want %d", meter.allocs, n)
		}
		first, last := meter.window(1, 257), meter.window(n-256, n)

		naive := &readMeter{}
		nc := interceptor.NewClient(store, naive.funcs())
		np := fmt.Sprintf("pxn%d", it)
		nstart := time.Now()
		for i := range 256 {
			if err := sim.NaiveAllocate(ctx, nc, np, fmt.Sprintf("naive%d-a%d", it, i)); err != nil {
				b.Fatal(err)
			}
		}
		naiveEarly := time.Since(nstart)
		var fill []client.Object
		for i := 256; i < n-256; i++ {
			fill = append(fill, &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("naive%d-f%d", it, i)}, Spec: kubeovnv1.VlanSpec{ID: i + 1, Provider: np}})
		}
		createMany(b, store, fill)
		base := naive.allocs
		nstart = time.Now()
		for i := range 256 {
			if err := sim.NaiveAllocate(ctx, nc, np, fmt.Sprintf("naive%d-z%d", it, i)); err != nil {
				b.Fatal(err)
			}
		}
		naiveLate := time.Since(nstart)
		naiveFirst, naiveLast := naive.window(1, 256), naive.window(base+1, base+256)

		b.Logf("controller requests, %d networks:\n%s", n, reqs.Table())
		b.ReportMetric(float64(reqs.Writes())/float64(n), "writes/network")
		b.ReportMetric(first, "reads/alloc@256")
		b.ReportMetric(last, "reads/alloc@4094")
		b.ReportMetric(naiveFirst, "naive-reads/alloc@256")
		b.ReportMetric(naiveLast, "naive-reads/alloc@4094")
		b.ReportMetric(naiveLast/last, "naive/ours-reads@4094")
		b.ReportMetric(float64(meter.reads.Load()), "reads-total")
		b.ReportMetric(float64(loadReads), "reads-load")
		b.ReportMetric(took.Seconds(), "s-converge-4094")
		b.ReportMetric(float64(naiveEarly.Microseconds())/256/1000, "naive-ms/alloc@256")
		b.ReportMetric(float64(naiveLate.Microseconds())/256/1000, "naive-ms/alloc@4094")
		b.ReportMetric(float64(took.Microseconds())/float64(n)/1000, "ms/network")
	}
}
