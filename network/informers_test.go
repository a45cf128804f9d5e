package network_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// informerRun is what one converge through informers measured.
type informerRun struct {
	// took is the time from Load to every network Ready.
	took time.Duration
	// cpu is the CPU time this process (controller, informers, simulated
	// Kube-OVN) and the kube-apiserver and etcd used meanwhile; cpuKnown is
	// false where it cannot be read.
	cpu      cpuUse
	cpuKnown bool
	// api counts the controller's requests that reach the API server:
	// its writes and its APIReader's reads (the informers' lists and
	// watches come on top, one of each per kind).
	api *kube.Requests
	// meter counts the objects read from the API server (APIReader) and
	// from the informers, and marks both at each Vlan the controller
	// creates.
	meter *readMeter
}

// watchedKinds are the kinds the controller process watches (see
// internal/controller's watch) on an API server with the Cluster API IPAM
// and capmox CRDs.
func watchedKinds() []client.Object {
	kinds := []client.Object{
		&v1alpha1.ProxmoxNetwork{}, &v1alpha1.ProxmoxNetworkZone{}, &v1alpha1.ProxmoxVLANClaim{},
		&kubeovnv1.Vlan{}, &kubeovnv1.Subnet{}, &kubeovnv1.ProviderNetwork{},
		&ipamv1alpha2.InClusterIPPool{}, &corev1.Namespace{}, &capiipam.IPAddress{},
	}
	for _, gvk := range network.MachineKinds {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		kinds = append(kinds, u)
	}
	return kinds
}

// convergeInformers converges the networks of namespace ns (want of them)
// the way the controller process runs: reads through controller-runtime
// informers on cfg's API server, every write fed to the controller's cache,
// Run with workers per runner on the real clock. A simulated Kube-OVN
// reports each Subnet Ready once its Vlan exists, as Kube-OVN does. It
// returns once every network of ns is Ready and the controller has stopped
// writing. checkListed checks every annotation write (checkReadyListed),
// which lists the namespace's networks each time: tests check, benchmarks
// do not, so that the lists do not load the API server being measured.
func convergeInformers(tb testing.TB, cfg *rest.Config, direct client.WithWatch, ns string, want, workers int, checkListed bool) informerRun {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	informers, err := crcache.New(cfg, crcache.Options{Scheme: sim.Scheme(), DefaultTransform: crcache.TransformStripManagedFields()})
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		if err := informers.Start(ctx); err != nil {
			tb.Errorf("informers: %v", err)
		}
	})
	cached, err := client.NewWithWatch(cfg, client.Options{Scheme: sim.Scheme(), Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		tb.Fatal(err)
	}
	run := informerRun{api: kube.NewRequests(), meter: &readMeter{}}
	// Writes go to the API server and are counted as requests; reads come
	// from the informers and are counted as cache reads.
	hooks := run.api.Funcs()
	cacheReads := run.meter.cacheFuncs()
	hooks.Get, hooks.List = cacheReads.Get, cacheReads.List
	if checkListed {
		checkReadyListed(tb, direct, &hooks)
		checkListedWhenReady(tb, direct, &hooks)
	}
	counted := interceptor.NewClient(interceptor.NewClient(cached, hooks), interceptor.Funcs{Create: run.meter.funcs().Create})
	apiReader := interceptor.NewClient(interceptor.NewClient(direct, run.api.Funcs()), run.meter.funcs())
	cache := network.NewCache()
	ctrl, err := network.New(network.Config{
		Client: interceptor.NewClient(counted, network.Feed(cache)), APIReader: apiReader,
		Cache: cache, Workers: workers, StatusInterval: network.DefaultStatusInterval,
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := network.Watch(ctx, informers, ctrl.Cache(), watchedKinds()...); err != nil {
		tb.Fatal(err)
	}
	ready := watchReady(ctx, tb, informers, ns, want)
	kubeOVN(ctx, tb, informers, direct, &wg)

	if *apiServerProfile != "" {
		wg.Go(func() { profileAPIServer(ctx, tb, cfg, *apiServerProfile) })
	}
	start := time.Now()
	cpu0, _ := cpuNow()
	if err := ctrl.Load(ctx); err != nil {
		tb.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	wg.Go(func() {
		if err := ctrl.Run(runCtx); err != nil {
			tb.Errorf("run: %v", err)
		}
	})
	select {
	case <-ready:
	case <-time.After(30 * time.Minute):
		tb.Fatalf("the networks of %s are not all Ready after 30 minutes", ns)
	}
	run.took = time.Since(start)
	cpu1, ok := cpuNow()
	run.cpu, run.cpuKnown = cpu1.since(cpu0), ok
	// Passes queued by the last events may still write; wait until the
	// counts stand still.
	for last, i := -1, 0; i < 60; i++ {
		time.Sleep(500 * time.Millisecond)
		now := run.api.Writes() + int(run.meter.reads.Load())
		if now == last {
			break
		}
		last = now
	}
	stop()
	return run
}

// apiServerProfile names the file convergeInformers writes a CPU profile
// of kube-apiserver to.
var apiServerProfile = flag.String("apiserver-cpuprofile", "", "write a 30 s CPU profile of kube-apiserver, taken while BenchmarkConvergeZoneAPIServer converges, to this file")

// profileAPIServer writes a 30 s CPU profile of the API server of cfg
// (its /debug/pprof/profile) to file.
func profileAPIServer(ctx context.Context, tb testing.TB, cfg *rest.Config, file string) {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		tb.Errorf("profile kube-apiserver: %v", err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/debug/pprof/profile?seconds=30", nil)
	if err != nil {
		tb.Errorf("profile kube-apiserver: %v", err)
		return
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			tb.Errorf("profile kube-apiserver: %v", err)
		}
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if ctx.Err() != nil {
		return // the converge ended first: no profile
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Errorf("profile kube-apiserver: status %d, %v", resp.StatusCode, err)
		return
	}
	if err := os.WriteFile(file, body, 0o644); err != nil {
		tb.Errorf("profile kube-apiserver: %v", err)
	}
}

// watchReady closes the returned channel once want networks of namespace
// ns report Ready on the informer.
func watchReady(ctx context.Context, tb testing.TB, informers crcache.Informers, ns string, want int) <-chan struct{} {
	tb.Helper()
	inf, err := informers.GetInformer(ctx, &v1alpha1.ProxmoxNetwork{})
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	var mu sync.Mutex
	ready := map[string]bool{}
	note := func(o any) {
		n, ok := o.(*v1alpha1.ProxmoxNetwork)
		if !ok || n.Namespace != ns || !meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !ready[n.Name] {
			ready[n.Name] = true
			if len(ready) == want {
				close(done)
			}
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, o any) { note(o) }}); err != nil {
		tb.Fatal(err)
	}
	return done
}

// kubeOVN plays Kube-OVN's part: once a Vlan exists, the Subnet of the
// same name reports Validated and Ready (one status patch, not counted as
// the controller's).
func kubeOVN(ctx context.Context, tb testing.TB, informers crcache.Informers, c client.Client, wg *sync.WaitGroup) {
	tb.Helper()
	inf, err := informers.GetInformer(ctx, &kubeovnv1.Vlan{})
	if err != nil {
		tb.Fatal(err)
	}
	vlans := make(chan string, 1<<16)
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if v, ok := o.(*kubeovnv1.Vlan); ok {
			vlans <- v.Name
		}
	}}); err != nil {
		tb.Fatal(err)
	}
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case name := <-vlans:
					sub := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}}
					if err := c.Status().Patch(ctx, sub, subnetReady); err != nil && ctx.Err() == nil {
						tb.Errorf("Kube-OVN: cannot report Subnet %s Ready: %v", name, err)
					}
				}
			}
		})
	}
}

// TestWorkersInformers converges 300 networks through informers with 8
// workers per runner on a real kube-apiserver, as the controller process
// runs, and checks the end state as TestWorkersAPIServer does: a stale
// informer read must cost a retry, never a second VLAN.
func TestWorkersInformers(t *testing.T) {
	cfg, store := startAPIServer(t)
	const n = 300
	objs := []client.Object{sim.ProviderNetwork("pxi", true), sim.Zone("zone-i", "vmbr1", "pxi", "1-4094"), sim.Namespace("informers", nil)}
	for i := range n {
		net, err := sim.Network("informers", fmt.Sprintf("i-%d", i), "zone-i", "vpc-i", fmt.Sprintf("10.%d.%d.0/24", 60+i/256, i%256))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, net...)
	}
	createMany(t, store, objs)
	run := convergeInformers(t, cfg, store, "informers", n, 8, true)
	if err := sim.VerifyInvariants(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	if run.meter.allocs != n {
		t.Errorf("%d Vlans created, want %d", run.meter.allocs, n)
	}
	t.Logf("%s: CPU of the controller process %s, kube-apiserver %s, etcd %s; requests:\n%s",
		run.took, run.cpu.self, run.cpu.child("kube-apiserver"), run.cpu.child("etcd"), run.api.Table())
}
