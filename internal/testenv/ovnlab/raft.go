//go:build linux

package ovnlab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// nbDatabase is the name of the northbound database in its schema.
const nbDatabase = "OVN_Northbound"

// startTimeout bounds how long the members may take to elect a leader.
const startTimeout = 20 * time.Second

// clusterRequirements are what an NB cluster needs; unlike a Lab it needs
// neither root nor the chassis' packages.
var clusterRequirements = []struct{ file, pkg string }{
	{"ovsdb-server", "openvswitch-common"},
	{"ovsdb-tool", "openvswitch-common"},
	{"ovs-appctl", "openvswitch-common"},
	{nbSchema, "ovn-common"},
}

// NBCluster is OVN_Northbound as a RAFT cluster of ovsdb-servers on
// 127.0.0.1, made as ovn-central's ovn-ctl makes one: the first member's
// database with `ovsdb-tool create-cluster`, every other member's with
// `ovsdb-tool join-cluster` naming the first, each server with its own
// unixctl socket, pid file and log and a ptcp: remote for clients. Its
// files live in one temporary directory; its processes are stopped by pid
// on cleanup.
type NBCluster struct {
	t   testing.TB
	dir string
	// Members are the servers, in the order they joined.
	Members []*Member
	// rebuilt counts Rebuild calls, so that a rebuilt cluster's files
	// never meet the old ones.
	rebuilt int
}

// Member is one ovsdb-server of an NBCluster.
type Member struct {
	*testproc.OVSDB
	// Index is the member's place in NBCluster.Members.
	Index int
	// Port is the client port; RaftPort the port of the RAFT connections.
	Port, RaftPort int

	db, ctl string
}

// Endpoint is the member's OVSDB address, "tcp:127.0.0.1:<port>".
func (m *Member) Endpoint() string { return "tcp:127.0.0.1:" + strconv.Itoa(m.Port) }

func (m *Member) raftAddress() string { return "tcp:127.0.0.1:" + strconv.Itoa(m.RaftPort) }

// NewNBCluster creates and starts a cluster of size members and waits
// until they have elected a leader. It fails t when a requirement is
// missing or a member does not start.
func NewNBCluster(t testing.TB, size int) *NBCluster {
	t.Helper()
	if err := checkCluster(); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ovnraft")
	if err != nil {
		t.Fatalf("cannot create the cluster directory: %v", err)
	}
	c := &NBCluster{t: t, dir: dir}
	t.Cleanup(c.teardown)
	for i := range size {
		m := &Member{Index: i}
		if m.Port, err = testproc.FreePort(); err == nil {
			m.RaftPort, err = testproc.FreePort()
		}
		if err != nil {
			t.Fatal(err)
		}
		c.Members = append(c.Members, m)
	}
	if err := c.create(); err != nil {
		t.Fatal(err)
	}
	return c
}

func checkCluster() error {
	var missing, pkgs []string
	for _, r := range clusterRequirements {
		if _, err := testproc.Find(r.file); err != nil {
			missing = append(missing, r.file)
			pkgs = append(pkgs, r.pkg)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the OVN NB cluster needs %s: run hack/test.sh, which installs them, or `apt-get install %s`",
			strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	return nil
}

// create makes every member's database and starts the members: the first
// creates the cluster, the others join it through the first.
func (c *NBCluster) create() error {
	first := c.Members[0]
	for _, m := range c.Members {
		name := fmt.Sprintf("nb%d-%d", m.Index, c.rebuilt)
		m.db, m.ctl = filepath.Join(c.dir, name+".db"), filepath.Join(c.dir, name+".ctl")
		var err error
		if m == first {
			_, err = run(nil, "ovsdb-tool", "create-cluster", m.db, nbSchema, m.raftAddress())
		} else {
			_, err = run(nil, "ovsdb-tool", "join-cluster", m.db, nbDatabase, m.raftAddress(), first.raftAddress())
		}
		if err != nil {
			return fmt.Errorf("cannot create the database of NB member %d: %w", m.Index, err)
		}
		if m.OVSDB, err = c.start(m, name); err != nil {
			return err
		}
	}
	_, err := c.Leader(startTimeout)
	return err
}

// start starts member m's ovsdb-server on its database; it is ready once
// it is a member of the cluster and serves clients.
func (c *NBCluster) start(m *Member, name string) (*testproc.OVSDB, error) {
	return testproc.StartOVSDB(testproc.OVSDBOptions{Name: fmt.Sprintf("ovsdb-server of NB member %d", m.Index),
		Dir: c.dir, File: name, Created: true, TCP: true, Port: m.Port,
		Ready: func() error {
			out, err := m.status()
			if err == nil && !strings.Contains(out, "Status: cluster member") {
				err = fmt.Errorf("not a cluster member yet: %s", statusLine(out, "Status:"))
			}
			return err
		},
	})
}

// status is the member's `ovs-appctl cluster/status OVN_Northbound`.
func (m *Member) status() (string, error) {
	return run(nil, "ovs-appctl", "-t", m.ctl, "cluster/status", nbDatabase)
}

// Role is the member's RAFT role ("leader", "follower", "candidate"), or
// "" when it does not answer.
func (m *Member) Role() string {
	if !m.Running() {
		return ""
	}
	out, err := m.status()
	if err != nil {
		return ""
	}
	role := statusLine(out, "Role:")
	return strings.TrimSpace(strings.TrimPrefix(role, "Role:"))
}

// statusLine is the first line of out that starts with prefix, trimmed.
func statusLine(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// Address is every member's endpoint, comma-separated, as the
// controller's --ovn-nb-address takes them.
func (c *NBCluster) Address() string {
	eps := make([]string, len(c.Members))
	for i, m := range c.Members {
		eps[i] = m.Endpoint()
	}
	return strings.Join(eps, ",")
}

// Leader waits up to timeout until exactly one running member says it is
// the leader, and returns it.
func (c *NBCluster) Leader(timeout time.Duration) (*Member, error) {
	deadline := time.Now().Add(timeout)
	for {
		var leaders []*Member
		for _, m := range c.Members {
			if m.Role() == "leader" {
				leaders = append(leaders, m)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the NB cluster has %d leaders after %s:\n%s", len(leaders), timeout, c.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Follower returns a running member that is not the leader.
func (c *NBCluster) Follower() (*Member, error) {
	leader, err := c.Leader(startTimeout)
	if err != nil {
		return nil, err
	}
	for _, m := range c.Members {
		if m != leader && m.Running() {
			return m, nil
		}
	}
	return nil, errors.New("the NB cluster has no running follower")
}

// Restart starts a killed or stopped member again on its database and
// waits until it is a cluster member again.
func (c *NBCluster) Restart(m *Member) error {
	if m.Running() {
		return fmt.Errorf("%s still runs", m.Name)
	}
	return m.Start()
}

// Rebuild loses the whole database, as replacing ovn-central's volumes
// does: every member is killed, its database deleted, and a new cluster
// (a new cluster ID, no rows) is created on the same ports.
func (c *NBCluster) Rebuild() error {
	for _, m := range c.Members {
		m.Kill()
		if err := os.Remove(m.db); err != nil {
			return fmt.Errorf("cannot delete the database of NB member %d: %w", m.Index, err)
		}
	}
	c.rebuilt++
	return c.create()
}

// describe is every member's role, for a message.
func (c *NBCluster) describe() string {
	var b strings.Builder
	for _, m := range c.Members {
		fmt.Fprintf(&b, "member %d (%s): running %v, role %q\n", m.Index, m.Endpoint(), m.Running(), m.Role())
	}
	return b.String()
}

// teardown stops every member by pid and deletes the directory; after a
// failure it logs each member's log tail.
func (c *NBCluster) teardown() {
	for _, m := range c.Members {
		if m.OVSDB == nil {
			continue
		}
		if c.t.Failed() {
			c.t.Logf("--- %s (pid %d, running %v, role %q):\n%s", m.Name, m.Pid(), m.Running(), m.Role(), m.Tail(20))
		}
		_ = m.Stop() // a member a test killed is reported above
	}
	_ = os.RemoveAll(c.dir)
}
