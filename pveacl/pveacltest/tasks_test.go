package pveacltest_test

import (
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl/pveacltest"
)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var upidFormat = regexp.MustCompile(`^UPID:pve:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmcreate:100:root@pam!pxfake:$`)

func TestTaskLifecycle(t *testing.T) {
	clk := &clock{now: time.Unix(1_800_000_000, 0)}
	srv, root := start(t, pveacltest.WithClock(clk.Now), pveacltest.WithTaskDuration(time.Minute))
	task, err := root.NodeRef("pve").NewVirtualMachine(ctx, 100, opt("name", "w"))
	must(t, err)
	if !upidFormat.MatchString(string(task.UPID)) {
		t.Errorf("UPIDs follow PVE's format: %s", task.UPID)
	}
	must(t, task.Ping(ctx))
	if !task.IsRunning || task.ExitStatus != "" {
		t.Errorf("within its duration the task runs: %+v", task)
	}
	log, err := task.Log(ctx, 0, 50)
	must(t, err)
	for _, line := range log {
		if line == "TASK OK" {
			t.Error("a running task's log has no final line yet")
		}
	}
	clk.Add(2 * time.Minute)
	must(t, task.Ping(ctx))
	if !task.IsSuccessful || task.ExitStatus != "OK" {
		t.Errorf("after its duration the task stopped with OK: %+v", task)
	}
	other := grantee(t, srv, "u@pve", nil)
	err = other.Get(ctx, "/nodes/pve/tasks/"+string(task.UPID)+"/status", nil)
	wantMessage(t, "another user's task needs Sys.Audit on the node", err, "Permission check failed (/nodes/pve, Sys.Audit)")
	err = root.Get(ctx, "/nodes/pve/tasks/UPID:pve:00000001:00000001:00000001:qmcreate:9:root@pam:/status", nil)
	wantMessage(t, "an unknown UPID", err, "upid: no such task")
	err = root.Get(ctx, "/nodes/pve/tasks/UPID:garbage/status", nil)
	wantMessage(t, "a malformed UPID", err, "upid: unable to parse worker upid")
}

func TestTaskOwnership(t *testing.T) {
	srv, _ := start(t)
	must(t, srv.AddPool("p", "", nil, nil))
	c := grantee(t, srv, "u@pve", map[string][]string{"/pool/p": {"PVEVMAdmin"}})
	task, err := c.NodeRef("pve").NewVirtualMachine(ctx, 100, opt("pool", "p"))
	must(t, err)
	var status map[string]any
	must(t, c.Get(ctx, "/nodes/pve/tasks/"+string(task.UPID)+"/status", &status))
	if status["user"] != "u@pve" || status["tokenid"] != "tk" {
		t.Errorf("a token's task reports user and tokenid apart: %v", status)
	}
	must(t, wait(task, nil))
	if infos := srv.Tasks(); len(infos) != 1 || infos[0].User != "u@pve!tk" || infos[0].Type != "qmcreate" {
		t.Errorf("the task record: %+v", infos)
	}
}
