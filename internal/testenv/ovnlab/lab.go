//go:build linux

package ovnlab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// Schemas of the databases the lab creates, as Debian installs them.
const (
	nbSchema      = "/usr/share/ovn/ovn-nb.ovsschema"
	sbSchema      = "/usr/share/ovn/ovn-sb.ovsschema"
	vswitchSchema = "/usr/share/openvswitch/vswitch.ovsschema"
)

// commandTimeout bounds every control command (ovs-vsctl, ovn-nbctl, ip, ...).
const commandTimeout = 30 * time.Second

// requirements maps every program and schema the lab uses to the Debian
// package that provides it.
var requirements = []struct{ file, pkg string }{
	{"ip", "iproute2"},
	{"ovsdb-server", "openvswitch-common"},
	{"ovsdb-tool", "openvswitch-common"},
	{"ovs-vsctl", "openvswitch-switch"},
	{"ovs-appctl", "openvswitch-common"},
	{"ovs-vswitchd", "openvswitch-switch"},
	{"ovn-northd", "ovn-central"},
	{"ovn-nbctl", "ovn-common"},
	{"ovn-sbctl", "ovn-common"},
	{"ovn-appctl", "ovn-common"},
	{"ovn-controller", "ovn-host"},
	{"ping", "iputils-ping"},
	{"ethtool", "ethtool"},
	{nbSchema, "ovn-common"},
	{sbSchema, "ovn-common"},
	{vswitchSchema, "openvswitch-common"},
}

// Check reports what the lab needs and this machine lacks: root, and the
// programs of the Debian packages named in the error.
func Check() error {
	var missing []string
	pkgs := map[string]bool{}
	var order []string
	for _, r := range requirements {
		if _, err := testproc.Find(r.file); err != nil {
			missing = append(missing, r.file)
			if !pkgs[r.pkg] {
				pkgs[r.pkg] = true
				order = append(order, r.pkg)
			}
		}
	}
	var errs []error
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("the OVN data-plane lab needs %s: run hack/test.sh, which installs them, or `apt-get install %s`",
			strings.Join(missing, ", "), strings.Join(order, " ")))
	}
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("the OVN data-plane lab needs root (it creates network namespaces and veth pairs): run the tests as root, as CI does"))
	}
	return errors.Join(errs...)
}

// run executes a program and returns its combined output.
func run(env []string, name string, args ...string) (string, error) {
	p, err := testproc.Find(name)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// ChassisSpec describes one chassis of a lab.
type ChassisSpec struct {
	// Name is the chassis name (external_ids:system-id), e.g. "ch1".
	Name string
	// Trunk gives the chassis a provider bridge on the hypervisor trunk,
	// mapped to the lab's provider network with ovn-bridge-mappings.
	Trunk bool
}

// Options configures New.
type Options struct {
	// Chassis to start, in order; encapsulation addresses are 192.0.2.<i+1>.
	Chassis []ChassisSpec
	// ProviderNetwork is the localnet network_name; "provider" when empty.
	ProviderNetwork string
	// NB and SB, when both are set, are the endpoints ("unix:<path>") of
	// northbound and southbound databases someone else serves, e.g. ones
	// created from another OVN release's schemas: the lab starts
	// ovn-northd and the chassis against them instead of creating its own,
	// and leaves them running when it ends. A unix socket, because the
	// chassis' ovn-controller runs in a network namespace of its own, where
	// the host's 127.0.0.1 is not reachable.
	NB, SB string
}

// Lab is a running OVN deployment with its chassis, hypervisor bridge and
// hosts.
type Lab struct {
	t        testing.TB
	dir      string
	prefix   string
	provider string
	// nbEndpoint and sbEndpoint are the databases' endpoints.
	nbEndpoint, sbEndpoint string

	// NB and SB are the ovsdb-servers of OVN_Northbound and OVN_Southbound;
	// nil when Options named databases served by someone else.
	NB, SB *testproc.OVSDB
	// Northd is ovn-northd.
	Northd *testproc.Process
	// Hypervisor holds the VLAN-aware bridge of the VMs (vmbr0) and the
	// underlay bridge of the tunnels (a Linux bridge, ul0).
	Hypervisor *Switch
	// Chassis are the OVN chassis in the order of Options.Chassis.
	Chassis []*Chassis

	namespaces []string
	daemons    []*testproc.Process
	nextMAC    int
}

// New starts a lab and stops it on cleanup. It fails t when a requirement
// is missing or a daemon does not start.
func New(t testing.TB, opts Options) *Lab {
	t.Helper()
	if err := Check(); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ovnlab")
	if err != nil {
		t.Fatalf("cannot create the lab directory: %v", err)
	}
	l := &Lab{t: t, dir: dir, prefix: randomPrefix(), provider: opts.ProviderNetwork}
	if l.provider == "" {
		l.provider = "provider"
	}
	l.nbEndpoint, l.sbEndpoint = "unix:"+l.socket("nb"), "unix:"+l.socket("sb")
	if opts.NB != "" || opts.SB != "" {
		for _, e := range []string{opts.NB, opts.SB} {
			if !strings.HasPrefix(e, "unix:") {
				_ = os.RemoveAll(dir)
				t.Fatalf("the lab's databases given as NB %q and SB %q: give both, each as unix:<path> (ovn-controller runs in a network namespace of its own)", opts.NB, opts.SB)
			}
		}
		l.nbEndpoint, l.sbEndpoint = opts.NB, opts.SB
	}
	t.Cleanup(l.teardown)
	if err := l.start(opts); err != nil {
		t.Fatal(err)
	}
	return l
}

func randomPrefix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "ol" + hex.EncodeToString(b)
}

func (l *Lab) start(opts Options) error {
	var err error
	if opts.NB == "" {
		if l.NB, err = l.startDB("nb", nbSchema, "the OVN northbound ovsdb-server"); err != nil {
			return err
		}
		if l.SB, err = l.startDB("sb", sbSchema, "the OVN southbound ovsdb-server"); err != nil {
			return err
		}
	}
	if err := l.startNorthd(); err != nil {
		return err
	}
	if l.Hypervisor, err = l.newSwitch("hv", "the hypervisor"); err != nil {
		return err
	}
	if err := l.Hypervisor.vsctl("add-br", "vmbr0", "--", "set", "bridge", "vmbr0", "datapath_type=netdev"); err != nil {
		return err
	}
	if err := l.ip("-n", l.Hypervisor.NS, "link", "add", "ul0", "type", "bridge"); err != nil {
		return err
	}
	if err := l.ip("-n", l.Hypervisor.NS, "link", "set", "ul0", "up"); err != nil {
		return err
	}
	for i, spec := range opts.Chassis {
		c, err := l.startChassis(i, spec)
		if err != nil {
			return err
		}
		l.Chassis = append(l.Chassis, c)
	}
	_, err = l.nbctl("--wait=hv", "sync")
	return err
}

// startDB creates a database from schema and serves it on <dir>/<name>.sock.
func (l *Lab) startDB(name, schema, what string) (*testproc.OVSDB, error) {
	db, err := testproc.StartOVSDB(testproc.OVSDBOptions{Name: what, Dir: l.dir, File: name, Schema: schema, Unix: true})
	if err != nil {
		return nil, err
	}
	l.daemons = append(l.daemons, &db.Process)
	return db, nil
}

// daemon describes the daemon what: program with args, its files in dir
// named after file (the pid file file.pid, the log file.log, its output
// file.out), env added to the test's environment.
func (l *Lab) daemon(what, dir, file string, env []string, program string, args ...string) (*testproc.Process, error) {
	path, err := testproc.Find(program)
	if err != nil {
		return nil, err
	}
	if env != nil {
		env = append(os.Environ(), env...)
	}
	log := filepath.Join(dir, file+".log")
	return &testproc.Process{Name: what, Path: path, Dir: dir, Env: env,
		Args:   append(args, "--pidfile="+filepath.Join(dir, file+".pid"), "--log-file="+log),
		Output: filepath.Join(dir, file+".out"), Logs: []string{log}}, nil
}

// launch starts d and remembers it, so that teardown stops it even when a
// later step of the lab fails.
func (l *Lab) launch(d *testproc.Process) error {
	l.daemons = append(l.daemons, d)
	return d.Start()
}

func (l *Lab) startNorthd() error {
	ctl := filepath.Join(l.dir, "northd.ctl")
	d, err := l.daemon("ovn-northd", l.dir, "northd", nil, "ovn-northd",
		"--ovnnb-db="+l.NBEndpoint(), "--ovnsb-db="+l.SBEndpoint(), "--unixctl="+ctl)
	if err != nil {
		return err
	}
	d.Ready = func() error {
		out, err := run(nil, "ovn-appctl", "-t", ctl, "status")
		if err == nil && !strings.Contains(out, "active") {
			err = fmt.Errorf("status %q", strings.TrimSpace(out))
		}
		return err
	}
	l.Northd = d
	return l.launch(d)
}

func (l *Lab) socket(name string) string { return filepath.Join(l.dir, name+".sock") }

// NBEndpoint is the northbound database's OVSDB address, "unix:<path>".
func (l *Lab) NBEndpoint() string { return l.nbEndpoint }

// SBEndpoint is the southbound database's OVSDB address.
func (l *Lab) SBEndpoint() string { return l.sbEndpoint }

// Dir is the directory of every database, socket, pid file and log.
func (l *Lab) Dir() string { return l.dir }

// Prefix starts the name of every network namespace of the lab.
func (l *Lab) Prefix() string { return l.prefix }

func (l *Lab) nbctl(args ...string) (string, error) {
	return run(nil, "ovn-nbctl", append([]string{"--db=" + l.NBEndpoint(), "--timeout=20"}, args...)...)
}

func (l *Lab) sbctl(args ...string) (string, error) {
	return run(nil, "ovn-sbctl", append([]string{"--db=" + l.SBEndpoint(), "--timeout=20"}, args...)...)
}

// NBCtl runs ovn-nbctl against the lab's NB and fails t on error.
func (l *Lab) NBCtl(args ...string) string {
	l.t.Helper()
	out, err := l.nbctl(args...)
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

// SBCtl runs ovn-sbctl against the lab's SB and fails t on error.
func (l *Lab) SBCtl(args ...string) string {
	l.t.Helper()
	out, err := l.sbctl(args...)
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

// SyncHV waits until every chassis has applied the NB's current contents
// (ovn-nbctl --wait=hv sync). Every chassis' ovn-controller must run.
func (l *Lab) SyncHV() {
	l.t.Helper()
	l.NBCtl("--wait=hv", "sync")
}

func (l *Lab) ip(args ...string) error {
	_, err := run(nil, "ip", args...)
	return err
}

// addNamespace creates the network namespace <prefix>-<name> with lo up.
func (l *Lab) addNamespace(name string) (string, error) {
	ns := l.prefix + "-" + name
	if err := l.ip("netns", "add", ns); err != nil {
		return "", err
	}
	l.namespaces = append(l.namespaces, ns)
	return ns, l.ip("-n", ns, "link", "set", "lo", "up")
}

// veth creates a veth pair with one end in each namespace, both up.
func (l *Lab) veth(nsA, nameA, nsB, nameB string) error {
	if err := l.ip("link", "add", "name", nameA, "netns", nsA, "type", "veth", "peer", "name", nameB, "netns", nsB); err != nil {
		return err
	}
	if err := l.ip("-n", nsA, "link", "set", nameA, "up"); err != nil {
		return err
	}
	return l.ip("-n", nsB, "link", "set", nameB, "up")
}

// teardown stops every daemon by pid, deletes the namespaces (and with them
// every veth) and the directory. After a failure it logs the daemons' tails.
func (l *Lab) teardown() {
	if l.t.Failed() {
		l.dump()
	}
	for _, d := range slices.Backward(l.daemons) {
		_ = d.Stop() // a daemon a test killed or that crashed is reported by dump
	}
	for _, ns := range l.namespaces {
		if err := l.ip("netns", "delete", ns); err != nil {
			l.t.Errorf("cannot delete network namespace %s: %v", ns, err)
		}
	}
	_ = os.RemoveAll(l.dir)
}

// dump logs every daemon's log tail and the SB's view, for a failed test.
func (l *Lab) dump() {
	for _, d := range l.daemons {
		l.t.Logf("--- %s (pid %d, running %v):\n%s", d.Name, d.Pid(), d.Running(), d.Tail(20))
	}
	if out, err := l.sbctl("show"); err == nil {
		l.t.Logf("--- ovn-sbctl show:\n%s", out)
	}
}
