package lab_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestMain runs the package's tests, then stops the shared labs: a shared
// lab outlives each test that uses it. A request a shared lab's fake did
// not serve, whoever sent it, fails the run, as it fails a test of a lab
// of its own.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := stopSharedLabs(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// A shared lab is one lab per capmox generation, started by the first test
// that asks for it and stopped by TestMain, for the tests that need
// nothing but a lab with the default options and change nothing of it
// but their own tenant's: each applies a tenant of its own (sharedTenant:
// namespace, cluster, pools, Proxmox user, tokens, PVE pool, storages and
// addresses of its own) and reads only what is its tenant's (tenantScope).
// The Proxmox VE fake, the managers, the template and the tenant API
// server are the lab's: a test that injects faults into the fake, adds
// templates or storages or bridges, takes nodes offline or changes a role
// every tenant's token holds starts a lab of its own (startLab).
type sharedLab struct {
	once sync.Once
	lab  *lab.Lab
	err  error

	mu      sync.Mutex
	log     []string
	tenants int
}

var sharedLabs = struct {
	sync.Mutex
	m map[capi.Capmox]*sharedLab
}{m: map[capi.Capmox]*sharedLab{}}

// sharedLabFor returns the shared lab of capmox gen, starting it if no
// test has yet. Its step lines go to its own log, which a test that fails
// prints the lines of about its tenant (sharedTenant).
func sharedLabFor(t *testing.T, gen capi.Capmox) (*lab.Lab, *sharedLab) {
	t.Helper()
	if gen == "" {
		gen = capi.CapmoxV09
	}
	sharedLabs.Lock()
	s, ok := sharedLabs.m[gen]
	if !ok {
		s = &sharedLab{}
		sharedLabs.m[gen] = s
	}
	sharedLabs.Unlock()
	s.once.Do(func() {
		s.lab, s.err = lab.Start(context.Background(), lab.Options{Capmox: gen, Log: s.logLine})
	})
	if s.err != nil {
		t.Fatalf("the shared lab of capmox %s did not start: %v", gen, s.err)
	}
	return s.lab, s
}

func (s *sharedLab) logLine(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, time.Now().UTC().Format("15:04:05.000 ")+line)
}

// lines are the lab's log lines that name any of words.
func (s *sharedLab) lines(words ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.log), func(line string) bool { return !mentions(line, words) })
}

func mentions(line string, words []string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(line, w) })
}

// stopSharedLabs stops every shared lab, after it checks that each lab's
// fake served every request it was sent.
func stopSharedLabs() error {
	sharedLabs.Lock()
	defer sharedLabs.Unlock()
	var errs []error
	for gen, s := range sharedLabs.m {
		if s.lab == nil {
			continue
		}
		if testing.Verbose() {
			fmt.Printf("the shared lab of capmox %s served %d tenants\n", gen, s.tenants)
		}
		if u := s.lab.PVE.Unserved(); len(u) > 0 {
			errs = append(errs, fmt.Errorf("the shared lab of capmox %s: the fake served no method for %v", gen, u))
		}
		if err := s.lab.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("cannot stop the shared lab of capmox %s: %w", gen, err))
		}
	}
	sharedLabs.m = map[capi.Capmox]*sharedLab{}
	return errors.Join(errs...)
}

// tenantScope is one test's tenant in a shared lab, what its assertions
// are held to.
type tenantScope struct {
	// NS is the tenant's namespace, its Proxmox user's and PVE pool's
	// name; Name its Kubernetes' name, Cluster the Cluster API Cluster's.
	NS, Name, Cluster string
	// First and Last bound its IPv4 addresses, First6 and Last6 its IPv6
	// ones.
	First, Last, First6, Last6 string
}

// demoScope is testdata's tenant as it is, in a lab of its own.
var demoScope = tenantScope{NS: "tenant-demo", Name: "demo", Cluster: "kubernetes-demo",
	First: "10.0.100.20", Last: "10.0.100.29", First6: "fd00:100::20", Last6: "fd00:100::29"}

// sharedTenant returns the shared lab of capmox gen and testdata's tenant
// (files, default kubernetes.yaml and nodes.yaml) re-homed for the test
// as the lab's nth tenant, tenant-<name>-<n>: namespace and PVE pool
// tenant-<name>-<n> (so its Proxmox user, tokens and storages, which
// pveacl's plan derives from the namespace), Kubernetes <name>-<n> (so
// its Cluster, pools, VMs and CCM Deployment), and ten addresses of VLAN 100's /24 (and of its /64) no
// other tenant of the lab has. When the test fails it prints the shared
// lab's lines about its tenant and capmox's clues about it.
func sharedTenant(t *testing.T, gen capi.Capmox, name string, files ...string) (*lab.Lab, lab.Tenant, tenantScope) {
	t.Helper()
	l, s := sharedLabFor(t, gen)
	s.mu.Lock()
	n := s.tenants
	s.tenants++
	s.mu.Unlock()
	// testdata's tenant has .20-.29; the shared lab's take .30-.39 on.
	if n > 21 {
		t.Fatalf("the shared lab of capmox %s has no addresses left for a %dth tenant", gen, n+1)
	}
	first := 30 + 10*n
	// The lab's nth tenant: a test run again (-count) makes a new one.
	name = fmt.Sprintf("%s-%d", name, n)
	sc := tenantScope{NS: "tenant-" + name, Name: name, Cluster: "kubernetes-" + name,
		First: fmt.Sprintf("10.0.100.%d", first), Last: fmt.Sprintf("10.0.100.%d", first+9),
		First6: fmt.Sprintf("fd00:100::%d", first), Last6: fmt.Sprintf("fd00:100::%d", first+9)}
	if len(files) == 0 {
		files = []string{"kubernetes.yaml", "nodes.yaml"}
	}
	tn := rehome(t, sc, files...)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		words := []string{sc.NS, sc.Cluster}
		t.Logf("the shared lab's log about %s:\n%s", sc.NS, strings.Join(s.lines(words...), "\n"))
		var mine []string
		for _, line := range strings.Split(l.Managers.Capmox.ReadOutput(), "\n") {
			if mentions(line, words) {
				mine = append(mine, line)
			}
		}
		t.Logf("capmox's log about %s, the last lines about VM ids, clones and errors:\n%s", sc.NS, capmoxClues(strings.Join(mine, "\n"), 60))
	})
	return l, tn, sc
}

// rehome reads testdata's files with its tenant moved to sc: every
// tenant-demo is sc.NS, every other demo sc.Name, and testdata's address
// ranges sc's.
func rehome(t *testing.T, sc tenantScope, files ...string) lab.Tenant {
	t.Helper()
	dir := t.TempDir()
	r := strings.NewReplacer("tenant-demo", sc.NS, "demo", sc.Name,
		demoScope.First+"-"+demoScope.Last, sc.First+"-"+sc.Last,
		demoScope.First6+"-"+demoScope.Last6, sc.First6+"-"+sc.Last6)
	var paths []string
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		must(t, err)
		path := filepath.Join(dir, f)
		must(t, os.WriteFile(path, []byte(r.Replace(string(data))), 0o600))
		paths = append(paths, path)
	}
	tn, err := lab.ReadTenant(paths...)
	must(t, err)
	if tn.Cluster.Namespace != sc.NS || tn.Cluster.Name != sc.Name {
		t.Fatalf("re-homed tenant is %s/%s, not %s/%s", tn.Cluster.Namespace, tn.Cluster.Name, sc.NS, sc.Name)
	}
	return tn
}

// tokens are the tenant's tokens' full ids.
func tokens(a *lab.Applied) []string {
	return slices.DeleteFunc([]string{a.TokenID, a.CCMTokenID, a.CSITokenID}, func(s string) bool { return s == "" })
}

// byTenant keeps the requests made with one of the tenant's tokens.
func byTenant(rs []pvefake.Request, a *lab.Applied) []pvefake.Request {
	ids := tokens(a)
	return slices.DeleteFunc(rs, func(r pvefake.Request) bool { return !slices.Contains(ids, r.User) })
}

// bootErrorsOf keeps the boot errors of the VMs the tenant's capmox token
// started (by their qmstart task).
func bootErrorsOf(l *lab.Lab, a *lab.Applied) []pvefake.BootError {
	users := map[string]string{}
	for _, task := range l.PVE.Tasks() {
		users[task.UPID] = task.User
	}
	return slices.DeleteFunc(l.PVE.BootErrors(), func(b pvefake.BootError) bool { return users[b.UPID] != a.TokenID })
}

// bootsOf keeps the boots of the VMs in PVE pool ns.
func bootsOf(l *lab.Lab, ns string) []pvelab.Boot {
	mine := map[int]bool{}
	for _, g := range labVMs(l) {
		mine[g.vmid] = g.pool == ns
	}
	return slices.DeleteFunc(l.Boots(), func(b pvelab.Boot) bool { return !mine[b.VMID] })
}

// checkTenantRequests asserts that the fake denied none of the tenant's
// tokens' requests, served each of them, and booted each VM its capmox
// token started.
func checkTenantRequests(t *testing.T, l *lab.Lab, a *lab.Applied) {
	t.Helper()
	if d, u, b := byTenant(l.PVE.Denied(), a), byTenant(l.PVE.Unserved(), a), bootErrorsOf(l, a); len(d)+len(u)+len(b) > 0 {
		t.Errorf("the tenant's tokens %v: denied %v, unserved %v, boot errors %v", tokens(a), d, u, b)
	}
}
