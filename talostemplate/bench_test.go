package talostemplate

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// naiveCheckTagSetFree normalises every template's tag string into a joined
// set and compares strings, as a shell or perl check would.
func naiveCheckTagSetFree(resources []VMResource, tags []string) []VMResource {
	want := strings.Join(looseTagSet(tags), ";")
	var held []VMResource
	for _, r := range resources {
		if r.Template != 0 && r.Tags != "" && strings.Join(looseTagSet(strings.Split(r.Tags, ";")), ";") == want {
			held = append(held, r)
		}
	}
	return held
}

// benchCluster is a large cluster: n guests, a third of them templates with
// realistic Talos tag sets, none with the wanted set.
func benchCluster(n int) []VMResource {
	rs := make([]VMResource, n)
	for i := range rs {
		rs[i] = VMResource{VMID: 100 + i, Node: fmt.Sprintf("pve%d", i%16), Name: fmt.Sprintf("guest-%d", i),
			Tags: fmt.Sprintf("cozystack;talos;talos-v1.%d.%d;schematic-%08x;tenant-%d", i%20, i%7, i*2654435761, i%50)}
		if i%3 == 0 {
			rs[i].Template = 1
		}
	}
	return rs
}

// BenchmarkCheckTagSetFree measures the allocation-free comparison against
// the naive normalise-and-join one on the same 10,000-guest cluster and
// reports the time ratio and both allocation counts.
func BenchmarkCheckTagSetFree(b *testing.B) {
	rs := benchCluster(10_000)
	tags := []string{"cozystack", "schematic-ce4c9805", "talos", "talos-v1.13.6"}
	if CheckTagSetFree(rs, tags) != nil || naiveCheckTagSetFree(rs, tags) != nil {
		b.Fatal("the benchmark cluster must not hold the wanted set")
	}
	var naive, fast time.Duration
	for b.Loop() {
		t0 := time.Now()
		_ = naiveCheckTagSetFree(rs, tags)
		t1 := time.Now()
		_ = CheckTagSetFree(rs, tags)
		naive += t1.Sub(t0)
		fast += time.Since(t1)
	}
	b.ReportMetric(float64(naive)/float64(fast), "naive/fast")
	b.ReportMetric(testing.AllocsPerRun(3, func() { _ = naiveCheckTagSetFree(rs, tags) }), "naive-allocs/op")
	b.ReportMetric(testing.AllocsPerRun(3, func() { _ = CheckTagSetFree(rs, tags) }), "fast-allocs/op")
	b.ReportMetric(float64(fast.Microseconds())/float64(b.N), "fast-µs/op")
	b.ReportMetric(float64(naive.Microseconds())/float64(b.N), "naive-µs/op")
}
