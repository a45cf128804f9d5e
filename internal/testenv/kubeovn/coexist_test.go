package kubeovn_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// steadyWindow is how long both controllers run with nothing changing
// while the NB's commits are counted.
const steadyWindow = time.Minute

// TestKubeOVNSteadyStateWritesNothing runs kube-ovn-controller and our
// resync (every 10 seconds, every network) side by side for a minute with
// nothing changing, and counts the transactions the northbound database
// commits: none, and none of ours.
func TestKubeOVNSteadyStateWritesNothing(t *testing.T) {
	cl := startCluster(t)
	subnets := append(cl.apply(seedSpec, 101), cl.apply(twoSubnetSpec, 102)...)
	var gws []ovngateway.Gateway
	for _, s := range subnets {
		cl.checkKubeOVNMade(s)
		cl.assign(s)
		gws = append(gws, cl.gateway(s))
	}
	cl.settle()
	tables := watchTables(cl.nb)
	commits := cl.commits()
	ours := cl.gw.Transactions()
	ctx, cancel := context.WithTimeout(cl.ctx, steadyWindow)
	defer cancel()
	passes := 0
	for tick := time.NewTicker(10 * time.Second); ; {
		outcomes, errs := cl.gw.ReconcileAll(ctx, gws)
		if ctx.Err() != nil {
			break
		}
		passes++
		for i, o := range outcomes {
			if errs[i] != nil || o.Reason != ovngateway.ReasonChassisAssigned {
				t.Errorf("resync of %s: %+v, %v", gws[i].RouterPort, o, errs[i])
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
			continue
		}
		break
	}
	n := cl.commits() - commits
	t.Logf("in %s with both controllers running: %d NB commits, %d of ours, %d resyncs of %d networks; rows changed by table: %v",
		steadyWindow, n, cl.gw.Transactions()-ours, passes, len(gws), tables.take())
	if n != 0 {
		t.Errorf("the NB committed %d transactions in %s of steady state, want 0", n, steadyWindow)
	}
	if w := cl.gw.Transactions() - ours; w != 0 {
		t.Errorf("our resyncs wrote %d transactions against Kube-OVN's steady state, want 0", w)
	}
	// The control: one write is one commit.
	before := cl.commits()
	nbctl(t, cl.k.NB.Unix, "set", "NB_Global", ".", "external_ids:pxsubstrate-control=1")
	if n := cl.commits() - before; n != 1 {
		t.Errorf("one ovn-nbctl write counted as %d commits", n)
	}
}

// settle waits until kube-ovn-controller has stopped writing: five seconds
// without an NB commit.
func (cl *cluster) settle() {
	cl.t.Helper()
	last, since := cl.commits(), time.Now()
	cl.eventually(2*time.Minute, "Kube-OVN settling", func() (bool, string) {
		if n := cl.commits(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 5*time.Second, fmt.Sprintf("still committing (%d)", last)
	})
}

func (cl *cluster) commits() int {
	cl.t.Helper()
	n, err := cl.k.NB.Commits()
	if err != nil {
		cl.t.Fatal(err)
	}
	return n
}

// tableWatch counts the row changes an NB monitor sees, by table.
type tableWatch struct {
	mu     sync.Mutex
	counts map[string]int
}

func watchTables(nb client.Client) *tableWatch {
	w := &tableWatch{counts: map[string]int{}}
	count := func(table string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.counts[table]++
	}
	nb.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		UpdateFunc: func(table string, _, _ model.Model) { count(table) },
		DeleteFunc: func(table string, _ model.Model) { count(table) },
		AddFunc:    func(table string, _ model.Model) { count(table) },
	})
	return w
}

// take returns the counts since the last take, as "table=n" sorted.
func (w *tableWatch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, table := range slices.Sorted(maps.Keys(w.counts)) {
		out = append(out, fmt.Sprintf("%s=%d", table, w.counts[table]))
	}
	w.counts = map[string]int{}
	return out
}
