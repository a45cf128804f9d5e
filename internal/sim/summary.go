package sim

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// Summary is what a large scenario run comes to, instead of every object.
type Summary struct {
	// Networks counts the ProxmoxNetworks by state: "Ready", the reason of
	// a Ready condition that is not True ("False/ZoneExhausted"), or
	// "Deleting/<reason>" for networks being deleted.
	Networks map[string]int `json:"networks"`
	// Zones are the VLAN counts of each zone, by name.
	Zones []ZoneSummary `json:"zones"`
	// Seconds is the wall time of the run.
	Seconds float64 `json:"seconds"`
	// Reconciles counts the controller's reconciles over every step.
	Reconciles int `json:"reconciles"`
	// Writes counts the controller's API writes over every step.
	Writes int `json:"writes"`
}

// ZoneSummary is one zone's VLANs, from its status.
type ZoneSummary struct {
	Name      string `json:"name"`
	Networks  int32  `json:"networks"`
	Allocated int32  `json:"allocatedVLANs"`
	Free      int32  `json:"freeVLANs"`
	Total     int32  `json:"totalVLANs"`
}

// networkState is a network's entry in Summary.Networks.
func networkState(n *v1alpha1.ProxmoxNetwork) string {
	c := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionReady)
	state := "Unknown/NotReconciled"
	switch {
	case c != nil && c.Status == metav1.ConditionTrue:
		state = "Ready"
	case c != nil:
		state = string(c.Status) + "/" + c.Reason
	}
	if !n.DeletionTimestamp.IsZero() {
		state = "Deleting/" + state
	}
	return state
}

// summarize reads the summary's counts from the API.
func (h *Harness) summarize(ctx context.Context) (*Summary, error) {
	var nets v1alpha1.ProxmoxNetworkList
	if err := h.store.List(ctx, &nets); err != nil {
		return nil, fmt.Errorf("cannot list ProxmoxNetworks: %w", err)
	}
	var zones v1alpha1.ProxmoxNetworkZoneList
	if err := h.store.List(ctx, &zones); err != nil {
		return nil, fmt.Errorf("cannot list ProxmoxNetworkZones: %w", err)
	}
	s := &Summary{Networks: map[string]int{}, Zones: []ZoneSummary{}, Writes: h.requests.Writes()}
	for i := range nets.Items {
		s.Networks[networkState(&nets.Items[i])]++
	}
	for _, z := range zones.Items {
		s.Zones = append(s.Zones, ZoneSummary{Name: z.Name, Networks: z.Status.Networks, Allocated: z.Status.AllocatedVLANs,
			Free: z.Status.FreeVLANs, Total: z.Status.TotalVLANs})
	}
	slices.SortFunc(s.Zones, func(a, b ZoneSummary) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return s, nil
}

// WriteSummary prints s as a table: the networks by state, the VLANs by
// zone, then the run's time, reconciles and writes.
func WriteSummary(w io.Writer, s *Summary) {
	fmt.Fprintln(w, "NETWORKS\tSTATE")
	for _, st := range slices.Sorted(maps.Keys(s.Networks)) {
		fmt.Fprintf(w, "%d\t%s\n", s.Networks[st], st)
	}
	fmt.Fprintln(w, "\t")
	fmt.Fprintln(w, "ZONE\tNETWORKS\tALLOCATED\tFREE\tTOTAL")
	for _, z := range s.Zones {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\n", z.Name, z.Networks, z.Allocated, z.Free, z.Total)
	}
	fmt.Fprintln(w, "\t")
	fmt.Fprintf(w, "TIME\t%.1f s\nRECONCILES\t%d\nWRITES\t%d\n", s.Seconds, s.Reconciles, s.Writes)
}

// progress counts the networks Ready as the controller's cache sees them,
// for the progress lines of a long converge.
type progress struct {
	mu    sync.Mutex
	ready map[client.ObjectKey]bool
}

func (p *progress) note(o client.Object, gone bool) {
	n, ok := o.(*v1alpha1.ProxmoxNetwork)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if gone {
		delete(p.ready, client.ObjectKeyFromObject(n))
		return
	}
	p.ready[client.ObjectKeyFromObject(n)] = meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady)
}

func (p *progress) counts() (ready, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.ready {
		if r {
			ready++
		}
	}
	return ready, len(p.ready)
}

// progressEvery is how often a converge that is still running prints a
// progress line on Options.Progress.
var progressEvery = time.Second

// reportProgress prints a line on Options.Progress every progressEvery
// until the returned function is called; that function prints a last line
// if any was printed.
func (h *Harness) reportProgress() func() {
	w := h.opts.Progress
	if w == nil {
		return func() {}
	}
	start := time.Now()
	stop, done := make(chan struct{}), make(chan struct{})
	var printed atomic.Bool
	line := func(verb string) {
		ready, total := h.progress.counts()
		fmt.Fprintf(w, "sim: %s %.1f s: %d of %d networks Ready, %d controller writes\n", verb, time.Since(start).Seconds(), ready, total, h.requests.Writes())
	}
	go func() {
		defer close(done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				printed.Store(true)
				line("converging,")
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		if printed.Load() {
			line("converged in")
		}
	}
}
