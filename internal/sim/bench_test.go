package sim_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/fakes/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// benchNetworks sizes BenchmarkSimulator10k: a smaller run to profile.
var benchNetworks = flag.Int("networks", 10000, "networks BenchmarkSimulator10k converges (spread over 4 zones)")

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

// naiveAllocation lists every Vlan of the store, rebuilds the used set and
// creates the lowest free ID: the cost per allocation of a reconciler
// BenchmarkSimulator10k converges 10,000 networks over 4 zones (2,500 each,
// on 4 provider networks) in the simulator, world included, from an empty
// controller, and reports the time, the peak heap and the reconciles. In the
// same run it times a naive allocation (list every Vlan, pick, create) on
// the same store once the 10,000 Vlans exist, and reports how much more one
// naive allocation costs than one whole network reconcile of ours.
func BenchmarkSimulator10k(b *testing.B) {
	const zones = 4
	perZone := *benchNetworks / zones
	ctx := context.Background()
	b.StopTimer()
	for it := 0; it < b.N; it++ {
		runtime.GC()
		stop := make(chan struct{})
		peak := peakHeap(stop)
		reqs := kube.NewRequests()
		hooks := reqs.Funcs()
		h := sim.NewHarness(sim.Options{MaxReconciles: 10_000_000, ControllerHooks: &hooks})
		var objs []client.Object
		for z := range zones {
			p := fmt.Sprintf("px%d", z)
			objs = append(objs, sim.ProviderNetwork(p, true), sim.Zone(fmt.Sprintf("zone-%d", z), "vmbr1", p, "1-4094"),
				sim.Namespace(fmt.Sprintf("tenant-%d", z), nil))
			for i := range perZone {
				net, err := sim.Network(fmt.Sprintf("tenant-%d", z), fmt.Sprintf("z%d-s%d", z, i), fmt.Sprintf("zone-%d", z), "vpc", "10.0.0.0/24")
				if err != nil {
					b.Fatal(err)
				}
				objs = append(objs, net...)
			}
		}
		for _, o := range objs {
			if err := h.Store().Create(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		if err := h.Start(ctx); err != nil {
			b.Fatal(err)
		}
		n, err := h.Converge(ctx)
		took := time.Since(start)
		b.StopTimer()
		close(stop)
		peakBytes := <-peak
		if err != nil {
			b.Fatal(err)
		}
		invs, err := sim.CheckInvariants(ctx, h.Store())
		if err != nil {
			b.Fatal(err)
		}
		for _, inv := range invs {
			if !inv.Holds {
				b.Fatalf("invariant %q: %s", inv.Name, inv.Detail)
			}
		}
		const samples = 20
		nstart := time.Now()
		for i := range samples {
			if err := sim.NaiveAllocate(ctx, h.Store(), "px0", fmt.Sprintf("naive-%d-%d", it, i)); err != nil {
				b.Fatal(err)
			}
		}
		naive := time.Since(nstart) / samples
		ours := took / time.Duration(zones*perZone)
		b.Logf("controller requests, %d networks:\n%s", zones*perZone, reqs.Table())
		b.ReportMetric(float64(reqs.Writes())/float64(zones*perZone), "writes/network")
		b.ReportMetric(took.Seconds(), "s-converge")
		b.ReportMetric(float64(peakBytes)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(n), "reconciles")
		b.ReportMetric(float64(ours.Microseconds())/1000, "ms/network")
		b.ReportMetric(float64(naive.Microseconds())/1000, "naive-ms/alloc@10k")
		b.ReportMetric(float64(naive)/float64(ours), "naive-alloc/our-network")
	}
}
