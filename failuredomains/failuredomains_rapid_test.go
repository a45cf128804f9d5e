package failuredomains_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/failuredomains"
)

// TestSplitProperties: the parts sum to the total, each is the total over
// n rounded down or up, the larger ones first, and a second call gives
// the same parts.
func TestSplitProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := rapid.Int32Range(0, 10000).Draw(t, "total")
		n := rapid.IntRange(1, 64).Draw(t, "n")
		parts := failuredomains.Split(total, n)
		if len(parts) != n {
			t.Fatalf("Split(%d, %d) has %d parts", total, n, len(parts))
		}
		var sum int32
		lo, hi := total/int32(n), (total+int32(n)-1)/int32(n)
		for i, p := range parts {
			sum += p
			if p < lo || p > hi {
				t.Fatalf("Split(%d, %d)[%d] = %d, not within %d..%d", total, n, i, p, lo, hi)
			}
			if i > 0 && p > parts[i-1] {
				t.Fatalf("Split(%d, %d) = %v: a larger part after a smaller one", total, n, parts)
			}
		}
		if sum != total {
			t.Fatalf("Split(%d, %d) = %v sums to %d", total, n, parts, sum)
		}
		if !slices.Equal(parts, failuredomains.Split(total, n)) {
			t.Fatalf("Split(%d, %d) is not deterministic", total, n)
		}
	})
}

// world is a pool's domains as Cluster API and Proxmox VE move them, and
// the controller that applies Plan to them.
type world struct {
	domains []failuredomains.Domain
	size    int32
	// lostSinceStep: a domain went offline since the controller's last
	// step, so its workers stopped without Plan having a say.
	lostSinceStep bool
}

func (w *world) online() []int {
	var out []int
	for i, d := range w.domains {
		if d.Online {
			out = append(out, i)
		}
	}
	return out
}

func (w *world) ready() int32 {
	var n int32
	for _, d := range w.domains {
		n += d.Ready
	}
	return n
}

// step is the controller: one Plan, applied.
func (w *world) step(t *rapid.T) {
	for _, c := range failuredomains.Plan(w.domains) {
		i := slices.IndexFunc(w.domains, func(d failuredomains.Domain) bool { return d.Name == c.Domain })
		if w.domains[i].Replicas != c.From {
			t.Fatalf("change %+v: domain has %d replicas", c, w.domains[i].Replicas)
		}
		if c.To < 0 {
			t.Fatalf("change %+v below zero", c)
		}
		w.domains[i].Replicas = c.To
	}
	w.lostSinceStep = false
}

// capi moves domain i one worker towards its replicas, as a MachineSet
// does; removing a running worker must never take the pool below its size
// unless a domain was just lost.
func (w *world) capi(t *rapid.T, i int) {
	d := &w.domains[i]
	switch {
	case !d.Online:
	case d.Ready < d.Replicas:
		d.Ready++
	case d.Ready > d.Replicas:
		if !w.lostSinceStep && w.ready()-1 < w.size {
			t.Fatalf("removing a worker of %s leaves %d ready, below the pool's %d: %+v", d.Name, w.ready()-1, w.size, w.domains)
		}
		d.Ready--
	}
}

// settle runs the controller and Cluster API until nothing changes.
func (w *world) settle(t *rapid.T) {
	for range 1000 {
		before := slices.Clone(w.domains)
		w.step(t)
		for i := range w.domains {
			for w.domains[i].Online && w.domains[i].Ready != w.domains[i].Replicas {
				w.capi(t, i)
			}
		}
		if slices.Equal(before, w.domains) {
			return
		}
	}
	t.Fatalf("the pool does not settle: %+v", w.domains)
}

// checkSettled: once settled, the offline domains have no replicas and the
// online ones hold the pool's size, each within floor/ceil of an even share.
func (w *world) checkSettled(t *rapid.T) {
	on := w.online()
	if len(on) == 0 {
		return
	}
	lo, hi := w.size/int32(len(on)), (w.size+int32(len(on))-1)/int32(len(on))
	var sum int32
	for _, d := range w.domains {
		if !d.Online {
			if d.Replicas != 0 {
				t.Fatalf("offline domain %s keeps %d replicas: %+v", d.Name, d.Replicas, w.domains)
			}
			continue
		}
		if d.Replicas < lo || d.Replicas > hi {
			t.Fatalf("domain %s settles at %d, not within %d..%d: %+v", d.Name, d.Replicas, lo, hi, w.domains)
		}
		sum += d.Replicas
	}
	if sum != w.size || w.ready() != w.size {
		t.Fatalf("settled pool has %d replicas and %d ready, want %d: %+v", sum, w.ready(), w.size, w.domains)
	}
	if len(on) == len(w.domains) {
		for _, d := range w.domains {
			if d.Replicas != d.Share {
				t.Fatalf("with every domain online %s settles at %d, not its share %d", d.Name, d.Replicas, d.Share)
			}
		}
	}
}

// TestPlanStateMachine drives a pool through lost and returning domains,
// Cluster API's progress and the controller's steps, in any order.
func TestPlanStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 5).Draw(t, "domains")
		size := rapid.Int32Range(int32(n), 15).Draw(t, "size")
		w := &world{size: size}
		for i, s := range failuredomains.Split(size, n) {
			w.domains = append(w.domains, failuredomains.Domain{Name: fmt.Sprintf("d%d", i), Share: s, Replicas: s, Ready: s, Online: true})
		}
		t.Repeat(map[string]func(*rapid.T){
			"lose": func(t *rapid.T) {
				on := w.online()
				if len(on) == 0 {
					return // nothing left to lose
				}
				i := rapid.SampledFrom(on).Draw(t, "lost")
				w.domains[i].Online, w.domains[i].Ready = false, 0
				w.lostSinceStep = true
			},
			"return": func(t *rapid.T) {
				var off []int
				for i, d := range w.domains {
					if !d.Online {
						off = append(off, i)
					}
				}
				if len(off) == 0 {
					return // nothing to bring back
				}
				w.domains[rapid.SampledFrom(off).Draw(t, "returned")].Online = true
			},
			"capi":    func(t *rapid.T) { w.capi(t, rapid.IntRange(0, n-1).Draw(t, "domain")) },
			"control": w.step,
			"settle": func(t *rapid.T) {
				w.settle(t)
				w.checkSettled(t)
			},
			"": func(t *rapid.T) {
				for _, d := range w.domains {
					if d.Replicas < 0 || d.Ready < 0 {
						t.Fatalf("negative counts: %+v", w.domains)
					}
				}
			},
		})
	})
}
