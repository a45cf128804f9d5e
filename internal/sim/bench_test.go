package sim_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// Sizes of the simulator benchmarks; smaller runs are for profiling.
var (
	benchNetworks    = flag.Int("networks", 10000, "networks the simulator benchmarks converge (spread over 4 zones)")
	baselineNetworks = flag.Int("baseline-networks", 1000, "networks BenchmarkSimulator10k converges on the plain fake client in the same run")
)

// peakHeap samples the heap in use until stop is closed and returns the
// largest value seen, in bytes.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// world creates n networks over 4 zones (one tenant namespace and one
// provider network per zone) in the harness's API.
func world(b *testing.B, h *sim.Harness, n int) {
	b.Helper()
	const zones = 4
	var objs []client.Object
	for z := range zones {
		p := fmt.Sprintf("px%d", z)
		objs = append(objs, sim.ProviderNetwork(p, true), sim.Zone(fmt.Sprintf("zone-%d", z), "vmbr1", p, "1-4094"),
			sim.Namespace(fmt.Sprintf("tenant-%d", z), nil))
		for i := range n / zones {
			net, err := sim.Network(fmt.Sprintf("tenant-%d", z), fmt.Sprintf("z%d-s%d", z, i), fmt.Sprintf("zone-%d", z), "vpc", "10.0.0.0/24")
			if err != nil {
				b.Fatal(err)
			}
			objs = append(objs, net...)
		}
	}
	for _, o := range objs {
		if err := h.Store().Create(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}

// converged is what one converge from an empty controller took.
type converged struct {
	took       time.Duration
	peak       uint64
	reconciles int
	writes     int
}

// converge starts a controller over n new networks on store and converges.
func converge(b *testing.B, store client.WithWatch, n int) (*sim.Harness, converged) {
	b.Helper()
	ctx := context.Background()
	reqs := kube.NewRequests()
	hooks := reqs.Funcs()
	h := sim.NewHarness(sim.Options{MaxReconciles: 10_000_000, ControllerHooks: &hooks, Store: store})
	world(b, h, n)
	runtime.GC()
	stop := make(chan struct{})
	peak := peakHeap(stop)
	start := time.Now()
	if err := h.Start(ctx); err != nil {
		b.Fatal(err)
	}
	r, err := h.Converge(ctx)
	took := time.Since(start)
	close(stop)
	if err != nil {
		b.Fatal(err)
	}
	invariants(b, h)
	return h, converged{took: took, peak: <-peak, reconciles: r, writes: reqs.Writes()}
}

func invariants(b *testing.B, h *sim.Harness) {
	b.Helper()
	if err := sim.VerifyInvariants(context.Background(), h.Store()); err != nil {
		b.Fatal(err)
	}
}

func msPer(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }

// BenchmarkSimulator10k converges 10,000 networks over 4 zones (2,500 each,
// on 4 provider networks, one namespace per zone) in the simulator, world
// included, from an empty controller, and reports the time, the peak heap,
// the reconciles and the controller's writes per network. In the same run
// it converges -baseline-networks networks (1,000) the same way on the
// plain fake client (the in-memory API before typed reads) and reports how
// much more a network costs there. The time per network grows with the
// size of a run, so the ratio at 1,000 understates the one at 10,000.
// Afterwards it times a naive allocation (list every Vlan, pick, create)
// on the converged store against one whole network reconcile of ours.
func BenchmarkSimulator10k(b *testing.B) {
	ctx := context.Background()
	b.StopTimer()
	for it := 0; it < b.N; it++ {
		n := *benchNetworks
		// The baseline runs first, so that it does not pay for collecting
		// the garbage of a heap that holds the larger run.
		_, base := converge(b, sim.NewStore(false), *baselineNetworks)
		b.StartTimer()
		h, ours := converge(b, nil, n)
		b.StopTimer()
		const samples = 20
		nstart := time.Now()
		for i := range samples {
			if err := sim.NaiveAllocate(ctx, h.Store(), "px0", fmt.Sprintf("naive-%d-%d", it, i)); err != nil {
				b.Fatal(err)
			}
		}
		naive := time.Since(nstart) / samples
		ms, baseMS := msPer(ours.took, n), msPer(base.took, *baselineNetworks)
		b.ReportMetric(ours.took.Seconds(), "s-converge")
		b.ReportMetric(float64(ours.peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(ours.reconciles), "reconciles")
		b.ReportMetric(float64(ours.writes)/float64(n), "writes/network")
		b.ReportMetric(ms, "ms/network")
		b.ReportMetric(baseMS, "plainfake-ms/network@baseline")
		b.ReportMetric(baseMS/ms, "plainfake/ours")
		b.ReportMetric(float64(naive.Microseconds())/1000, "naive-ms/alloc")
		b.ReportMetric(float64(naive.Microseconds())/1000/ms, "naive-alloc/our-network")
	}
}

// BenchmarkRestart10k converges 10,000 networks over 4 zones, then times a
// restart: a new controller loads its cache and reconciles every network,
// zone and namespace back to steady state. It reports the time and the
// controller's writes during the restart, which must be none. In the same
// run the same converged objects are copied onto the plain fake client
// and a restart over them is timed: the ratio is the in-memory API's share.
func BenchmarkRestart10k(b *testing.B) {
	b.StopTimer()
	for it := 0; it < b.N; it++ {
		n := *benchNetworks
		h, _ := converge(b, nil, n)
		ours, oursWrites, r := restart(b, h)
		if oursWrites != 0 {
			b.Fatalf("a restart over %d converged networks wrote %d times, want none", n, oursWrites)
		}
		plain := sim.NewStore(false)
		copyWorld(b, h, plain)
		base, baseWrites, _ := restart(b, sim.NewHarness(sim.Options{MaxReconciles: 10_000_000, Store: plain}))
		if baseWrites != 0 {
			b.Fatalf("a restart over the copied world wrote %d times, want none", baseWrites)
		}
		b.ReportMetric(ours.Seconds(), "s-restart")
		b.ReportMetric(float64(oursWrites), "writes")
		b.ReportMetric(float64(r), "reconciles")
		b.ReportMetric(base.Seconds(), "plainfake-s-restart")
		b.ReportMetric(base.Seconds()/ours.Seconds(), "plainfake/ours")
	}
}

// restart times a restart of h's controller and its converge, counting the
// new controller's writes.
func restart(b *testing.B, h *sim.Harness) (time.Duration, int, int) {
	b.Helper()
	ctx := context.Background()
	reqs := kube.NewRequests()
	hooks := reqs.Funcs()
	h2 := sim.NewHarness(sim.Options{MaxReconciles: 10_000_000, ControllerHooks: &hooks, Store: h.Store()})
	b.StartTimer()
	start := time.Now()
	if err := h2.Start(ctx); err != nil {
		b.Fatal(err)
	}
	r, err := h2.Converge(ctx)
	took := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	return took, reqs.Writes(), r
}

// copyWorld creates every object of h in store, status included.
func copyWorld(b *testing.B, h *sim.Harness, store client.WithWatch) {
	b.Helper()
	ctx := context.Background()
	objs, err := h.Objects(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		u.SetUID("")
		status, hasStatus := u.Object["status"]
		if err := store.Create(ctx, u); err != nil {
			b.Fatal(err)
		}
		if hasStatus {
			u.Object["status"] = status
			if err := store.Status().Update(ctx, u); err != nil {
				b.Fatal(err)
			}
		}
	}
}
