//go:build linux

package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// The CI sweep is the default; the full run of docs/performance.md is
//
//	go test ./e2e -run TestFault -v -timeout 3h -fault-networks 4094 -fault-kills 20 -fault-etcd-down 30s
var (
	faultNetworks = flag.Int("fault-networks", 256, "networks each TestFault run converges in one zone (the full run: 4094)")
	faultKills    = flag.Int("fault-kills", 5, "leaders TestFaultLeaderKill kills with SIGKILL during the run (the full run: 20)")
	faultEtcdDown = flag.Duration("fault-etcd-down", 10*time.Second, "how long TestFaultAPIServer keeps etcd stopped (the full run: 30s)")
	faultSeed     = flag.Uint64("fault-seed", 0, "seed of the kill points; 0 takes one from the clock (it is logged)")
)

// faultCluster is a cluster whose zone hands out 1-4094, as the whole-zone
// benchmarks do.
func faultCluster() controllertest.Cluster {
	cl := cluster("x", 100)
	cl.Ranges = []string{"1-4094"}
	return cl
}

// faultArgs are the controller flags of the fault runs: the lease timings of
// the other process tests, otherwise the defaults (workers, API QPS and
// burst), as a cluster runs it.
func faultArgs(nb *ovngatewaytest.Real) []string {
	return append(append(nbArgs(nb), leaseFlags...), "--webhook-port=0", "--log-level=info")
}

// addNetworks writes the objects of networks 0..n-1 of cl, eight at a time.
func addNetworks(t testing.TB, c client.Client, cl controllertest.Cluster, n int) []string {
	t.Helper()
	names := make([]string, n)
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		names[i] = cl.NetworkName(i)
		g.Go(func() error {
			objs, err := sim.Network(cl.Tenant, names[i], cl.Zone, cl.VPC, fmt.Sprintf("10.%d.%d.0/24", cl.Net+i/256, i%256))
			if err != nil {
				return err
			}
			for _, o := range objs {
				if err := c.Create(context.Background(), o); err != nil {
					return fmt.Errorf("cannot create %T %s: %w", o, o.GetName(), err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return names
}

// replicas keeps a number of controller processes running, as a Deployment
// and its kubelets do: a replica that exits (killed, or stopped after
// losing its Lease) is replaced by a new one, named r<k>.
type replicas struct {
	e    *env
	args []string
	want int
	mu   sync.Mutex
	all  []*proc
	// killed are the replicas the test killed.
	killed map[*proc]bool
}

// tend starts replicas until want of them run.
func (r *replicas) tend(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	live := 0
	for _, p := range r.all {
		if alive(p) {
			live++
		}
	}
	for ; live < r.want; live++ {
		r.all = append(r.all, r.e.start(t, fmt.Sprintf("r%d", len(r.all)), r.args...))
	}
}

// byName returns the running replica called name.
func (r *replicas) byName(name string) *proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.all {
		if alive(p) && p.name == name {
			return p
		}
	}
	return nil
}

// alive reports whether p has not ended.
func alive(p *proc) bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill kills p with SIGKILL.
func (r *replicas) kill(p *proc) {
	r.mu.Lock()
	if r.killed == nil {
		r.killed = map[*proc]bool{}
	}
	r.killed[p] = true
	r.mu.Unlock()
	p.kill()
}

// unexpected counts the replicas that ended by themselves.
func (r *replicas) unexpected() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.all {
		if !alive(p) && !r.killed[p] {
			n++
		}
	}
	return n
}

// faultRun is one zone converging under a controller pair while the test
// plays Kube-OVN and the faults.
type faultRun struct {
	e     *env
	cl    controllertest.Cluster
	k     *controllertest.KubeOVN
	reps  *replicas
	names []string
}

// newFaultRun writes n networks of faultCluster on e and starts two
// replicas on a fresh ovsdb-server.
func newFaultRun(t *testing.T, e *env, n int) *faultRun {
	t.Helper()
	cl := faultCluster()
	cl.Setup(t, e.admin, "x-node-1", "x-node-2")
	nb := ovngatewaytest.StartReal(t)
	k := controllertest.NewKubeOVN(nb.Endpoint())
	t.Cleanup(k.Close)
	t0 := time.Now()
	names := addNetworks(t, e.admin, cl, n)
	t.Logf("wrote %d networks in %s", n, time.Since(t0).Round(time.Millisecond))
	return &faultRun{e: e, cl: cl, k: k, names: names, reps: &replicas{e: e, args: faultArgs(nb), want: 2}}
}

// progress counts the networks Ready with their gateway, and those whose
// status shows a VLAN.
type progress struct{ ready, allocated int }

func (p progress) String() string { return fmt.Sprintf("%d/%d", p.allocated, p.ready) }

// countProgress reads the progress of cl's networks with one list.
func countProgress(ctx context.Context, c client.Client, cl controllertest.Cluster) (progress, error) {
	var list v1alpha1.ProxmoxNetworkList
	if err := c.List(ctx, &list, client.InNamespace(cl.Tenant)); err != nil {
		return progress{}, err
	}
	var p progress
	for _, item := range list.Items {
		if item.Status.VLAN != 0 {
			p.allocated++
		}
		gw := meta.FindStatusCondition(item.Status.Conditions, v1alpha1.ConditionGatewayReady)
		if meta.IsStatusConditionTrue(item.Status.Conditions, v1alpha1.ConditionReady) && gw != nil && gw.Reason == v1alpha1.ReasonChassisAssigned {
			p.ready++
		}
	}
	return p, nil
}

// until plays Kube-OVN and tends the replicas until every network is
// Ready with its gateway, calling at with the progress after each round
// (the last read, while the API server cannot answer); it returns the
// time taken.
func (f *faultRun) until(t *testing.T, timeout time.Duration, at func(progress)) time.Duration {
	t.Helper()
	t0 := time.Now()
	var last progress
	controllertest.Eventually(t, timeout, func() error {
		f.reps.tend(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// at sees the progress before Kube-OVN's part reacts too: the
		// controller may have handed out every VLAN before the first
		// round, and a round's reaction can make them all Ready at once,
		// so a fault waiting for the progress after it would land after
		// the run.
		if p, err := countProgress(ctx, f.e.admin, f.cl); err == nil && at != nil {
			last = p
			at(p)
		}
		return f.k.React(ctx, f.e.admin)
	}, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p, err := countProgress(ctx, f.e.admin, f.cl)
		if err == nil {
			last = p
		}
		if at != nil {
			at(last)
		}
		if err != nil {
			return false, err.Error()
		}
		return p.ready == len(f.names), fmt.Sprintf("%d of %d networks ready", p.ready, len(f.names))
	})
	return time.Since(t0)
}

// netState is what a converged network holds: its VLAN, the Vlan, Subnet
// and claims that carry it, and the finalizers on them.
type netState struct {
	VLAN             int32
	VLANName         string
	Finalizers       []string
	VlanID           int
	VlanNetwork      string
	VlanFinalizers   []string
	SubnetVlan       string
	SubnetFinalizers []string
	Claims           []int32
}

// finalState reads the netState of every network of cl, and fails t on
// a claim that names no network of cl (a leaked claim).
func finalState(t *testing.T, c client.Client, cl controllertest.Cluster) map[string]netState {
	t.Helper()
	ctx := context.Background()
	st := map[string]netState{}
	var nets v1alpha1.ProxmoxNetworkList
	if err := c.List(ctx, &nets, client.InNamespace(cl.Tenant)); err != nil {
		t.Fatal(err)
	}
	for _, n := range nets.Items {
		st[n.Name] = netState{VLAN: n.Status.VLAN, VLANName: n.Status.VLANName, Finalizers: n.Finalizers}
	}
	var vlans kubeovnv1.VlanList
	if err := c.List(ctx, &vlans); err != nil {
		t.Fatal(err)
	}
	for _, v := range vlans.Items {
		if s, ok := st[v.Name]; ok && v.Spec.Provider == cl.ProviderNetwork {
			s.VlanID, s.VlanNetwork, s.VlanFinalizers = v.Spec.ID, v.Labels[v1alpha1.LabelNetworkName], v.Finalizers
			st[v.Name] = s
		}
	}
	var subnets kubeovnv1.SubnetList
	if err := c.List(ctx, &subnets); err != nil {
		t.Fatal(err)
	}
	for _, sn := range subnets.Items {
		if s, ok := st[sn.Name]; ok {
			s.SubnetVlan, s.SubnetFinalizers = sn.Spec.Vlan, sn.Finalizers
			st[sn.Name] = s
		}
	}
	var claims v1alpha1.ProxmoxVLANClaimList
	if err := c.List(ctx, &claims, client.MatchingLabels{v1alpha1.LabelProviderNetwork: cl.ProviderNetwork}); err != nil {
		t.Fatal(err)
	}
	for _, cm := range claims.Items {
		s, ok := st[cm.Spec.Network.Name]
		if !ok || cm.Spec.Network.Namespace != cl.Tenant {
			t.Errorf("leaked claim %s: it names %s, which does not exist", cm.Name, cm.Spec.Network)
			continue
		}
		s.Claims = append(s.Claims, cm.Spec.VLAN)
		st[cm.Spec.Network.Name] = s
	}
	for name, s := range st {
		slices.Sort(s.Claims)
		st[name] = s
	}
	return st
}

// checkConverged: every network holds one VLAN, carried by its Vlan
// (labelled for it) and by exactly one claim, no two networks share it
// (checkVLANs), and its ProxmoxNetwork, Vlan and Subnet carry the
// finalizer.
func checkConverged(t *testing.T, c client.Client, cl controllertest.Cluster, names []string) map[string]netState {
	t.Helper()
	checkVLANs(t, c, cl, names)
	st := finalState(t, c, cl)
	for _, name := range names {
		s := st[name]
		if len(s.Claims) != 1 || s.Claims[0] != s.VLAN {
			t.Errorf("network %s holds VLAN %d and the claims %v: want exactly its own", name, s.VLAN, s.Claims)
		}
		for what, fin := range map[string][]string{"ProxmoxNetwork": s.Finalizers, "Subnet": s.SubnetFinalizers} {
			if !slices.Contains(fin, v1alpha1.Finalizer) {
				t.Errorf("the %s of network %s has finalizers %v, without %s", what, name, fin, v1alpha1.Finalizer)
			}
		}
	}
	if len(st) != len(names) {
		t.Errorf("%d networks in the tenant, want %d", len(st), len(names))
	}
	return st
}

// shape is a netState without its VLAN numbers: whether the Vlan and the
// claims carry the network's VLAN, and everything else as it is.
type shape struct {
	State                             netState
	VlanCarriesVLAN, ClaimsAreOwnVLAN bool
}

// shapes splits st into the sorted VLANs held and each network's shape.
func shapes(st map[string]netState) ([]int32, map[string]shape) {
	var vids []int32
	out := map[string]shape{}
	for name, s := range st {
		vids = append(vids, s.VLAN)
		sh := shape{State: s, VlanCarriesVLAN: s.VlanID == int(s.VLAN), ClaimsAreOwnVLAN: slices.Equal(s.Claims, []int32{s.VLAN})}
		sh.State.VLAN, sh.State.VlanID, sh.State.Claims = 0, 0, nil
		out[name] = sh
	}
	slices.Sort(vids)
	return vids, out
}

// TestFaultLeaderKill: two replicas with leader election on the Lease
// converge -fault-networks networks; the leader is killed with SIGKILL at
// -fault-kills random points, and a new replica replaces it as a
// Deployment would. A point is how long a leader works (from the first
// claim or status it writes) before it is killed, drawn uniformly from 0
// to T/2k (T the fault-free run's time, k the kills): a quarter of the work
// on average and half at most, so every kill lands while work is left (a
// new leader lists and resyncs first), spread over allocation and the
// gateway and status work that follows, each at whatever that leader was
// doing.
// A sampler lists every VLAN holder (status, Vlans, claims) every 150 ms
// throughout; no sample may show two networks on one VLAN, checked after
// each kill and at the end.
//
// The end state must equal that of a fault-free run of the same networks,
// by the same names, on an API server of its own: the same set of VLANs
// (the lowest n of the zone), and per network the same Vlan, Subnet,
// claims and finalizers, each carrying the network's VLAN. Which network
// gets which number is not compared: the allocator hands out the lowest
// free ID in the order networks reach it, and that order is a race between
// the workers (and the controller enqueues its start-up keys in no fixed
// order), so two fault-free runs already differ there. What no run may do
// is move a network: the sampler fails the test when a network's status
// shows a VLAN other than the first it showed, so every network kept the
// VLAN it was first given through every kill.
func TestFaultLeaderKill(t *testing.T) {
	n, kills := *faultNetworks, *faultKills
	var want map[string]netState
	var clean time.Duration
	t.Run("FaultFree", func(t *testing.T) {
		f := newFaultRun(t, newEnv(t), n)
		f.reps.tend(t)
		clean = f.until(t, 60*time.Minute, nil)
		want = checkConverged(t, f.e.admin, f.cl, f.names)
		t.Logf("fault-free: %d networks converged in %s", n, clean.Round(time.Millisecond))
	})
	if t.Failed() {
		t.FailNow()
	}

	seed := *faultSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	// Each leader is killed after leading for a random part of an even
	// share of half the fault-free time, so that the kills add up to at
	// most half of it and all land while there is work left: a new leader
	// first lists and resyncs, which the fault-free run did once.
	var delays []time.Duration
	for range kills {
		delays = append(delays, time.Duration(rng.Int64N(int64(clean)/int64(2*kills))).Round(time.Millisecond))
	}
	t.Logf("seed %d: kill each leader after it led for %v", seed, delays)

	e := newEnv(t)
	f := newFaultRun(t, e, n)
	s := startSampler(e.admin, f.cl, 150*time.Millisecond)
	defer s.Stop()
	f.reps.tend(t)
	k := &killer{reps: f.reps, cl: f.cl, delays: delays}
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		k.watch(t, e.admin, s, stop)
	}()
	f.until(t, 120*time.Minute, k.seen)
	close(stop)
	<-watched
	converged := time.Since(k.last)
	s.Stop()
	if len(k.delays) > 0 {
		t.Errorf("%d kills left when the run converged", len(k.delays))
	}
	samples, failed, _ := s.result()
	s.check(t, "at the end")
	got := checkConverged(t, e.admin, f.cl, f.names)
	wantVIDs, wantShapes := shapes(want)
	gotVIDs, gotShapes := shapes(got)
	if diff := cmp.Diff(wantVIDs, gotVIDs); diff != "" {
		t.Errorf("VLANs held after the kills differ from the fault-free run (-fault-free +faulted):\n%s", diff)
	}
	if diff := cmp.Diff(wantShapes, gotShapes); diff != "" {
		t.Errorf("end state after the kills differs from the fault-free run (-fault-free +faulted):\n%s", diff)
	}
	t.Logf("%d networks: killed %d leaders (replica@claims/networks with a VLAN/Ready) %v; converged %s after the last kill (fault-free run: %s); %d replicas replaced after exiting by themselves; %d samples (%d failed), 0 duplicates, 0 moves",
		n, len(k.done), k.done, converged.Round(time.Millisecond), clean.Round(time.Millisecond), f.reps.unexpected(), samples, failed)
}

// killer kills each leader once it has worked for the next of its delays:
// from the first change it made (a claim more than when it took office, or
// more networks with a VLAN or Ready), so that a leader is not always
// killed while it starts. It watches the Lease and counts the claims
// (metadata only) every 50 ms on a goroutine of its own; the other
// progress comes from the rounds of faultRun.until.
type killer struct {
	reps   *replicas
	cl     controllertest.Cluster
	delays []time.Duration
	// leader is the replica in office, which took it at claims and
	// progress from; it works since working (zero until then).
	leader  string
	from    [2]int
	working time.Time

	mu       sync.Mutex
	progress progress
	last     time.Time
	done     []string
}

// claims counts the claims of k's provider network.
func (k *killer) claims(ctx context.Context, c client.Client) (int, error) {
	var l metav1.PartialObjectMetadataList
	l.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ProxmoxVLANClaimList"))
	err := c.List(ctx, &l, client.MatchingLabels{v1alpha1.LabelProviderNetwork: k.cl.ProviderNetwork})
	return len(l.Items), err
}

// watch kills leaders until every delay is used or stop is closed.
func (k *killer) watch(t *testing.T, c client.Client, s *sampler, stop <-chan struct{}) {
	for len(k.delays) > 0 {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		h := holder(ctx, c)
		claims, err := k.claims(ctx, c)
		cancel()
		leader := k.reps.byName(h)
		if leader == nil || err != nil {
			continue // the Lease names a dead replica until it expires
		}
		k.mu.Lock()
		p := k.progress
		k.mu.Unlock()
		now := [2]int{claims, p.allocated + p.ready}
		switch {
		case h != k.leader:
			k.leader, k.from, k.working = h, now, time.Time{}
			continue
		case k.working.IsZero() && (now[0] > k.from[0] || now[1] > k.from[1]):
			k.working = time.Now()
		}
		if k.working.IsZero() || time.Since(k.working) < k.delays[0] {
			continue
		}
		k.delays = k.delays[1:]
		k.reps.kill(leader)
		k.mu.Lock()
		k.last = time.Now()
		k.done = append(k.done, fmt.Sprintf("%s@%d/%s", h, claims, p))
		k.mu.Unlock()
		s.check(t, "after killing "+h)
	}
}

// seen records the progress last read.
func (k *killer) seen(p progress) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.progress = p
}

// child is a control-plane process envtest started (etcd or
// kube-apiserver), which the test stops and starts again itself with the
// same command line: the same ports, certificates and data folder.
type child struct {
	name, log string
	argv      []string
	mu        sync.Mutex
	closed    bool
	pid       int
	// cmd is the process the test started (nil while envtest's runs).
	cmd  *exec.Cmd
	done chan struct{}
}

// findChild returns the one child of the test process running the binary
// name (its /proc comm).
func findChild(t testing.TB, name string) *child {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []*child
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		comm, rest, ok := strings.Cut(string(stat), ") ")
		if !ok || comm[strings.IndexByte(comm, '(')+1:] != name {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		found = append(found, &child{name: name, pid: pid, log: filepath.Join(t.TempDir(), name+".log"),
			argv: strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")})
	}
	if len(found) != 1 {
		t.Fatalf("want one %s started by this test, found %d", name, len(found))
	}
	return found[0]
}

// stop sends SIGTERM to the running process and waits a minute at most
// until it is gone.
func (c *child) stop() error {
	c.mu.Lock()
	cmd, done, pid := c.cmd, c.done, c.pid
	c.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cannot stop %s: %w", c.name, err)
	}
	deadline := time.After(time.Minute)
	if cmd != nil {
		select {
		case <-done:
			return nil
		case <-deadline:
			_ = cmd.Process.Kill()
			return fmt.Errorf("%s still ran a minute after SIGTERM", c.name)
		}
	}
	// envtest waits for its own process: once reaped, the pid is gone.
	for syscall.Kill(pid, 0) == nil {
		select {
		case <-deadline:
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("%s (pid %d) still ran a minute after SIGTERM", c.name, pid)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// close stops the running process for good: start fails afterwards.
func (c *child) close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.stop()
}

// start runs the command line again, logging to c.log.
func (c *child) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%s: the test is over", c.name)
	}
	log, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("cannot start %s again: %w", c.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	c.cmd, c.done, c.pid = cmd, done, cmd.Process.Pid
	return nil
}

// controlPlane finds envtest's etcd and kube-apiserver, and stops both
// when the test ends, the API server first (it would wait for a stopped
// etcd), before envtest cleans up their folders.
func controlPlane(t testing.TB) (etcd, apiserver *child) {
	t.Helper()
	etcd, apiserver = findChild(t, "etcd"), findChild(t, "kube-apiserver")
	t.Cleanup(func() {
		for _, c := range []*child{apiserver, etcd} {
			if err := c.close(); err != nil {
				t.Error(err)
			}
		}
	})
	return etcd, apiserver
}

// TestFaultAPIServer: two replicas converge -fault-networks networks; once a
// quarter of them shows a VLAN, etcd is stopped (SIGTERM) for
// -fault-etcd-down and started again on its data folder; half that time
// later the kube-apiserver is stopped (SIGTERM) and started again on the
// same port, certificates and etcd. The round that sees the quarter runs
// the faults and waits for them, so Kube-OVN's part (played by the test's
// rounds) makes no subnet Ready meanwhile and the faults land before the run
// converges however loaded the machine is; the controller's replicas go on
// through the faults on their own. Replicas
// that exit (a leader that cannot renew its Lease stops) are replaced as a
// Deployment would; nothing else intervenes. Asserted: both faults land
// before the run converges, the run converges, a sampler (every 150 ms)
// never sees two networks on one VLAN nor a network moving to another,
// and at the end every network holds exactly one claim, its own, and no
// claim is left over.
func TestFaultAPIServer(t *testing.T) {
	n := *faultNetworks
	e := newEnv(t)
	etcd, apiserver := controlPlane(t)
	f := newFaultRun(t, e, n)
	s := startSampler(e.admin, f.cl, 150*time.Millisecond)
	defer s.Stop()
	f.reps.tend(t)

	p := &apiFaults{etcd: etcd, apiserver: apiserver, down: *faultEtcdDown, n: n,
		ping: func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return e.admin.Get(ctx, client.ObjectKey{Name: f.cl.Zone}, &v1alpha1.ProxmoxNetworkZone{})
		},
		count: func() (progress, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return countProgress(ctx, e.admin, f.cl)
		}}
	total := f.until(t, 60*time.Minute, p.seen)
	end := time.Now()
	if !p.fired {
		t.Fatal("the run converged before etcd was stopped")
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	for what, at := range map[string]progress{"etcd stopped": p.atEtcd, "the kube-apiserver restarted": p.atAPI} {
		if at.ready == n {
			t.Errorf("every network was Ready when %s: the fault came after the run", what)
		}
	}
	s.Stop()
	samples, failed, _ := s.result()
	s.check(t, "at the end")
	checkConverged(t, e.admin, f.cl, f.names)
	t.Logf("%d networks converged in %s; etcd stopped at %s networks with a VLAN/Ready and gone for %s; kube-apiserver restarted at %s, unanswered for %s; converged %s after it answered again; %d replicas replaced after exiting by themselves; %d samples (%d failed during the faults), 0 duplicates, 0 moves",
		n, total.Round(time.Millisecond), p.atEtcd, p.etcdDown.Round(time.Millisecond), p.atAPI, p.apiDown.Round(time.Millisecond),
		end.Sub(p.answered).Round(time.Millisecond), f.reps.unexpected(), samples, failed)
}

// apiFaults stops etcd once a quarter of the networks show a VLAN, starts
// it again after down, and restarts the kube-apiserver down/2 later.
type apiFaults struct {
	etcd, apiserver *child
	down            time.Duration
	n               int
	// ping reads one object through the API server; count reads the
	// networks' progress.
	ping  func() error
	count func() (progress, error)

	fired             bool
	atEtcd, atAPI     progress
	etcdDown, apiDown time.Duration
	answered          time.Time
	err               error
}

// seen is called by each round with its progress; the first round that
// sees a quarter of the networks with a VLAN runs the faults and returns
// once the kube-apiserver answers again.
func (p *apiFaults) seen(pr progress) {
	if p.fired || pr.allocated < p.n/4 {
		return
	}
	p.fired = true
	p.atEtcd = pr
	p.err = p.run()
}

func (p *apiFaults) run() error {
	if err := p.etcd.stop(); err != nil {
		return err
	}
	t0 := time.Now()
	time.Sleep(p.down)
	if err := p.etcd.start(); err != nil {
		return err
	}
	p.etcdDown = time.Since(t0)
	time.Sleep(p.down / 2)
	// etcd answers again: the progress the replicas made meanwhile.
	var err error
	if p.atAPI, err = p.count(); err != nil {
		p.atAPI = p.atEtcd
	}
	t0 = time.Now()
	if err := p.apiserver.stop(); err != nil {
		return err
	}
	if err := p.apiserver.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for p.ping() != nil {
		if time.Now().After(deadline) {
			return errors.New("the kube-apiserver did not answer within 2 minutes of its restart")
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.answered = time.Now()
	p.apiDown = p.answered.Sub(t0)
	return nil
}
