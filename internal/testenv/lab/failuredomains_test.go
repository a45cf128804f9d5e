package lab_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/failuredomains"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/spread"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
)

// TestFailureDomains: a pool spread over the three Proxmox nodes as three
// failure domains (capmox v0.9.0, the controller with --failure-domains
// and --pool-healing), rendered at 3 workers and scaled to 6, runs 2 in
// each domain. When pve3 goes offline the controller moves its share to
// pve1 and pve2 (3 each); when pve3 returns it raises pve3 first and lowers
// the others only once pve3's workers run, so the pool's running workers
// never fall below 6 after the return (sampled every half second). Every
// Node's topology.kubernetes.io/zone, set by the real Proxmox CCM v0.7.0,
// and its node.cluster.x-k8s.io/failure-domain, copied by Cluster API from
// its Machine, name its domain. The workers per domain and the times are
// logged for docs/performance.md.
func TestFailureDomains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := startLabWith(t, lab.Options{Controller: controller(t), FailureDomains: true, PoolHealing: true, NodeMonitorGracePeriod: 10 * time.Second})
	addSharedTemplate(t, l, false)
	tn := readTenant(t)
	tn.Cluster.Spec.Proxmox.IPv4Config.Addresses = []string{"10.0.100.20-10.0.100.49"}
	p := &tn.Pools[0].Spec
	p.Replicas, p.ReadyUnknownTimeout, p.Proxmox.Heal = ptrTo(int32(3)), "20s", true
	for _, n := range pvelab.Nodes {
		p.Proxmox.FailureDomains = append(p.Proxmox.FailureDomains, capmoxrender.FailureDomain{Name: n})
	}
	useSharedTemplate(&tn)
	a, err := l.Apply(ctx, tn)
	must(t, err)
	start := time.Now()
	eventually(t, 5*time.Minute, "one worker in each domain", func() (bool, string) { return spreadIs(t, l, map[string]int{"pve1": 1, "pve2": 1, "pve3": 1}) })
	t.Logf("failure domains: 3 workers %v after %s", domainCounts(t, l), time.Since(start).Round(time.Second))

	p.Replicas = ptrTo(int32(6))
	must(t, l.UpdatePools(ctx, tn, a))
	start = time.Now()
	eventually(t, 5*time.Minute, "two workers in each domain", func() (bool, string) { return spreadIs(t, l, map[string]int{"pve1": 2, "pve2": 2, "pve3": 2}) })
	t.Logf("failure domains: scaled to 6, %v after %s", domainCounts(t, l), time.Since(start).Round(time.Second))
	checkZones(t, l)

	must(t, l.PVE.SetNodeOnline("pve3", false))
	start = time.Now()
	eventually(t, 5*time.Minute, "pve3's share on pve1 and pve2", func() (bool, string) { return spreadIs(t, l, map[string]int{"pve1": 3, "pve2": 3}) })
	t.Logf("failure domains: pve3 offline, %v after %s", domainCounts(t, l), time.Since(start).Round(time.Second))

	sampler := sampleRunning(t, l)
	must(t, l.PVE.SetNodeOnline("pve3", true))
	start = time.Now()
	eventually(t, 6*time.Minute, "two workers in each domain again", func() (bool, string) {
		ok, state := spreadIs(t, l, map[string]int{"pve1": 2, "pve2": 2, "pve3": 2})
		if !ok {
			return false, state
		}
		total, state := machines(t, l.Client, "tenant-demo")
		return total == 6 && strings.Count(state, "phase=") == 6, state
	})
	low, samples := sampler()
	t.Logf("failure domains: pve3 back, %v after %s; running workers never below %d over %d samples", domainCounts(t, l), time.Since(start).Round(time.Second), low, samples)
	if low < 6 {
		t.Errorf("the pool ran %d workers during the rebalance, below its 6", low)
	}
	checkZones(t, l)
	checkDomainMachineDeployments(t, l)
	ev := tenantEvents(t, l, "FailureDomain")
	t.Logf("failure domains' Events: %v", ev)
	if ev[string(spread.ReasonMoved)] < 6 {
		t.Errorf("events %v: want each of the six changes (three on the loss, three on the return) as %s", ev, spread.ReasonMoved)
	}
	if d := deniedBut(l, destroyedIDs(l)); len(d) != 0 {
		t.Errorf("the tenant's tokens were denied %v", d)
	}
}

// tenantEvents counts the tenant's Events whose reason has prefix, by
// reason.
func tenantEvents(t *testing.T, l *lab.Lab, prefix string) map[string]int {
	t.Helper()
	list := &eventsv1.EventList{}
	must(t, l.Client.List(context.Background(), list, client.InNamespace("tenant-demo")))
	out := map[string]int{}
	for _, e := range list.Items {
		if strings.HasPrefix(e.Reason, prefix) {
			n := 1
			if e.Series != nil {
				n = int(e.Series.Count)
			}
			out[e.Reason] += n
		}
	}
	return out
}

// domainMachines are the tenant's Running Machines with a Node, by their
// failure domain label, and the Node of each.
func domainMachines(t *testing.T, l *lab.Lab) (map[string][]string, string) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineList")
	must(t, l.Client.List(context.Background(), list, client.InNamespace("tenant-demo")))
	out := map[string][]string{}
	var desc []string
	for _, m := range list.Items {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		d := m.GetLabels()[failuredomains.LabelDomain]
		desc = append(desc, fmt.Sprintf("%s domain=%s phase=%s node=%s", m.GetName(), d, phase, node))
		if phase == "Running" && node != "" {
			out[d] = append(out[d], node)
		}
	}
	slices.Sort(desc)
	return out, strings.Join(desc, "\n")
}

// domainCounts are the running workers per domain.
func domainCounts(t *testing.T, l *lab.Lab) map[string]int {
	t.Helper()
	m, _ := domainMachines(t, l)
	out := map[string]int{}
	for d, nodes := range m {
		out[d] = len(nodes)
	}
	return out
}

// spreadIs says whether the running workers per domain are want.
func spreadIs(t *testing.T, l *lab.Lab, want map[string]int) (bool, string) {
	t.Helper()
	got := domainCounts(t, l)
	_, state := domainMachines(t, l)
	return maps.Equal(got, want), fmt.Sprintf("running per domain %v, want %v\n%s", got, want, state)
}

// sampleRunning counts the tenant's running workers every half second
// until the returned function is called, which gives the least count seen
// and the number of samples.
func sampleRunning(t *testing.T, l *lab.Lab) func() (int, int) {
	t.Helper()
	var mu sync.Mutex
	low, samples := 1<<30, 0
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(500 * time.Millisecond):
			}
			n := 0
			for _, nodes := range mustDomainMachines(l) {
				n += len(nodes)
			}
			mu.Lock()
			low, samples = min(low, n), samples+1
			mu.Unlock()
		}
	}()
	return func() (int, int) {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return low, samples
	}
}

// mustDomainMachines is domainMachines for the sampler's goroutine, which
// may not fail the test: a failed list counts nothing.
func mustDomainMachines(l *lab.Lab) map[string][]string {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineList")
	if err := l.Client.List(context.Background(), list, client.InNamespace("tenant-demo")); err != nil {
		return nil
	}
	out := map[string][]string{}
	for _, m := range list.Items {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		if phase == "Running" && node != "" {
			out[m.GetLabels()[failuredomains.LabelDomain]] = append(out[m.GetLabels()[failuredomains.LabelDomain]], node)
		}
	}
	return out
}

// checkZones: every running worker's Node has the zone of its domain (the
// real CCM's topology.kubernetes.io/zone, its VM's Proxmox node) and its
// domain in failuredomains.NodeLabel (Cluster API's copy of its
// Machine's label).
func checkZones(t *testing.T, l *lab.Lab) {
	t.Helper()
	byDomain, _ := domainMachines(t, l)
	eventually(t, time.Minute, "every Node labelled with its domain", func() (bool, string) {
		var bad []string
		for d, nodes := range byDomain {
			for _, name := range nodes {
				var node corev1.Node
				if err := l.TenantClient.Get(context.Background(), client.ObjectKey{Name: name}, &node); err != nil {
					bad = append(bad, fmt.Sprintf("Node %s: %v", name, err))
					continue
				}
				if node.Labels[corev1.LabelTopologyZone] != d || node.Labels[failuredomains.NodeLabel] != d {
					bad = append(bad, fmt.Sprintf("Node %s of domain %s: zone %q, %s %q", name, d, node.Labels[corev1.LabelTopologyZone],
						failuredomains.NodeLabel, node.Labels[failuredomains.NodeLabel]))
				}
			}
		}
		return len(bad) == 0, strings.Join(bad, "\n")
	})
}

// checkDomainMachineDeployments: after the return, every domain's
// MachineDeployment is back at its share.
func checkDomainMachineDeployments(t *testing.T, l *lab.Lab) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineDeploymentList")
	must(t, l.Client.List(context.Background(), list, client.InNamespace("tenant-demo"), client.MatchingLabels{failuredomains.LabelPool: "kubernetes-demo-workers"}))
	if len(list.Items) != 3 {
		t.Fatalf("%d MachineDeployments of the pool, want 3", len(list.Items))
	}
	for _, md := range list.Items {
		r, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas")
		if fmt.Sprint(r) != md.GetAnnotations()[failuredomains.AnnotationShare] {
			t.Errorf("MachineDeployment %s: replicas %d, share %q", md.GetName(), r, md.GetAnnotations()[failuredomains.AnnotationShare])
		}
	}
}
