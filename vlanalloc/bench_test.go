package vlanalloc

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// benchZone returns a zone of exactly size IDs and the claims that fill it.
func benchZone(b *testing.B, size int) (*Zone, []Claim) {
	z := mustZone(b, ZoneSpec{Ranges: []string{fmt.Sprintf("1-%d", size)}})
	claims := make([]Claim, size)
	for i := range claims {
		claims[i] = Claim{Network: NetworkRef{Namespace: fmt.Sprintf("t%d", i%50), Name: fmt.Sprintf("n%d", i)}, Vlan: fmt.Sprintf("s%d", i)}
	}
	return z, claims
}

// fillIndex allocates every ID of the zone, observes each created Vlan, then
// rebuilds the index from what was observed, as a restart would.
func fillIndex(b *testing.B, z *Zone, claims []Claim) {
	x := NewIndex(z, nil, nil)
	vlans := make([]Vlan, 0, len(claims))
	for _, c := range claims {
		vid, err := x.Allocate(c)
		if err != nil {
			b.Fatal(err)
		}
		v := Vlan{Name: c.Vlan, VID: vid, Provider: testProvider, Zone: "z", Network: c.Network}
		x.ObserveVlan(v)
		vlans = append(vlans, v)
	}
	if _, err := x.Allocate(Claim{Network: net("late"), Vlan: "late"}); err == nil {
		b.Fatal("a full zone must be exhausted")
	}
	if NewIndex(z, vlans, nil).Counts().Free != 0 {
		b.Fatal("the rebuilt index must be full")
	}
}

// naiveAllocate is the approach the index replaces: on every allocation,
// parse the ranges again, list every Vlan (a cache list deep-copies each
// object) and rebuild the used set, then take the lowest free ID.
func naiveAllocate(ranges []string, store []*kubeovnv1.Vlan) (int, error) {
	allocatable, err := ParseRanges(ranges)
	if err != nil {
		return 0, err
	}
	list := kubeovnv1.VlanList{Items: make([]kubeovnv1.Vlan, 0, len(store))}
	for _, v := range store {
		list.Items = append(list.Items, *v.DeepCopy())
	}
	used := make(map[int]bool, len(list.Items))
	for _, v := range list.Items {
		if v.Spec.Provider == testProvider {
			used[v.Spec.ID] = true
		}
	}
	for _, vid := range allocatable.IDs() {
		if !used[vid] {
			return vid, nil
		}
	}
	return 0, ErrExhausted
}

// naiveStore returns the Vlans of the first n claims, as the naive approach
// would have created them.
func naiveStore(claims []Claim, n int) []*kubeovnv1.Vlan {
	store := make([]*kubeovnv1.Vlan, 0, n)
	for i, c := range claims[:n] {
		store = append(store, &kubeovnv1.Vlan{
			ObjectMeta: metav1.ObjectMeta{Name: c.Vlan, Labels: map[string]string{
				v1alpha1.LabelZone: "z", v1alpha1.LabelNetworkNamespace: c.Network.Namespace, v1alpha1.LabelNetworkName: c.Network.Name,
			}, Finalizers: []string{v1alpha1.Finalizer}},
			Spec: kubeovnv1.VlanSpec{ID: i + 1, Provider: testProvider},
		})
	}
	return store
}

// fillNaive allocates every ID of the zone the naive way.
func fillNaive(b *testing.B, size int, claims []Claim) {
	ranges := []string{fmt.Sprintf("1-%d", size)}
	all := naiveStore(claims, size)
	for i := range claims {
		if _, err := naiveAllocate(ranges, all[:i]); err != nil {
			b.Fatal(err)
		}
	}
}

// naiveSamples is how many naive allocations each iteration times on a
// half-full zone. The naive cost grows linearly with the number of Vlans, so
// its cost at half-full is its mean cost over a whole fill.
const naiveSamples = 4

var (
	naiveOnce      sync.Once
	naiveFillNanos = map[int]float64{}
)

// BenchmarkAllocateZone fills a 256-ID and a 4,094-ID zone, then rebuilds
// the index as after a restart, and reports the index's cost per
// allocation. In the same iterations it times the naive approach on a
// half-full zone (its mean cost per allocation over a fill), so both are
// measured under the same machine load, and reports the speed-up at each
// size and how the index's cost grows from 256 to 4,094. A complete naive
// fill is also timed once per size, as a check of that mean.
func BenchmarkAllocateZone(b *testing.B) {
	sizes := []int{256, 4094}
	zones := make([]*Zone, len(sizes))
	claims := make([][]Claim, len(sizes))
	halfFull := make([][]*kubeovnv1.Vlan, len(sizes))
	for i, size := range sizes {
		zones[i], claims[i] = benchZone(b, size)
		halfFull[i] = naiveStore(claims[i], size/2)
	}
	naiveOnce.Do(func() {
		for i, size := range sizes {
			start := time.Now()
			fillNaive(b, size, claims[i])
			naiveFillNanos[size] = float64(time.Since(start).Nanoseconds()) / float64(size)
		}
	})
	b.ResetTimer()
	ours := make([]time.Duration, len(sizes))
	naive := make([]time.Duration, len(sizes))
	for range b.N {
		for i, size := range sizes {
			start := time.Now()
			fillIndex(b, zones[i], claims[i])
			ours[i] += time.Since(start)
			ranges := []string{fmt.Sprintf("1-%d", size)}
			start = time.Now()
			for range naiveSamples {
				if _, err := naiveAllocate(ranges, halfFull[i]); err != nil {
					b.Fatal(err)
				}
			}
			naive[i] += time.Since(start)
		}
	}
	b.StopTimer()
	per := make([]float64, len(sizes))
	for i, size := range sizes {
		per[i] = float64(ours[i].Nanoseconds()) / float64(b.N*size)
		naivePer := float64(naive[i].Nanoseconds()) / float64(b.N*naiveSamples)
		b.ReportMetric(per[i], fmt.Sprintf("ns/alloc@%d", size))
		b.ReportMetric(naivePer, fmt.Sprintf("naive-ns/alloc@%d", size))
		b.ReportMetric(naiveFillNanos[size], fmt.Sprintf("naive-fill-ns/alloc@%d", size))
		b.ReportMetric(naivePer/per[i], fmt.Sprintf("speedup@%d", size))
	}
	b.ReportMetric(per[1]/per[0], "growth-4094/256")
}
