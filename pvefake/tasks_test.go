package pvefake_test

import (
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
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
	srv, root := start(t, pvefake.WithClock(clk.Now), pvefake.WithTaskDuration(time.Minute))
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
	if len(log) != 1 || log[0] != "no content" {
		t.Errorf("a running task's log has no final line yet, and an empty log reads as dump_logfile's \"no content\": %v", log)
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

func TestTaskLogQueries(t *testing.T) {
	srv, root := start(t)
	task, err := root.NodeRef("pve").NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:1"), opt("efidisk0", "local-lvm:1,efitype=4m"))
	must(t, wait(task, err))
	base := "/nodes/pve/tasks/" + string(task.UPID) + "/log"
	var lines []map[string]any
	must(t, root.Get(ctx, base+"?limit=0", &lines))
	if len(lines) != 3 || lines[2]["t"] != "TASK OK" {
		t.Errorf("limit=0 reads the whole log, as dump_logfile does: %v", lines)
	}
	must(t, root.Get(ctx, base+"?limit=1&start=1", &lines))
	if len(lines) != 1 || lines[0]["n"] != float64(2) {
		t.Errorf("start and limit count lines from 0 and number them from 1: %v", lines)
	}
	unknown := "/nodes/pve/tasks/UPID:pve:00000001:00000001:00000001:qmcreate:9:root@pam!pxfake:"
	status, body := raw(t, srv, "GET", unknown+"/log", rootAuth(srv), nil)
	if want := `{"data":[{"n":1,"t":"unable to open file - No such file or directory"}],"total":1}`; status != "200 OK" || body != want {
		t.Errorf("an unknown UPID's log is the failed open, 200 OK: %s %s", status, body)
	}
	status, body = raw(t, srv, "GET", unknown, rootAuth(srv), nil)
	if status != "200 OK" || body != `{"data":[{"name":"log"},{"name":"status"}]}` {
		t.Errorf("the index of any UPID lists log and status: %s %s", status, body)
	}
	other := grantee(t, srv, "u@pve", nil)
	err = other.Get(ctx, unknown+"/log", &lines)
	wantMessage(t, "an unknown UPID of another user still needs Sys.Audit on the node", err, "Permission check failed (/nodes/pve, Sys.Audit)")
}
