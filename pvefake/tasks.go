package pvefake

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// task is a finished (or, with WithTaskDuration, running) worker.
type task struct {
	upid   string
	node   string
	typ    string
	id     string
	user   string // user or full token id that started it
	pid    int
	pstart int
	start  time.Time
	end    time.Time
	exit   string
	log    []string
}

// taskLog collects a worker's output lines and counts its warnings.
type taskLog struct {
	lines    []string
	warnings int
}

func (l *taskLog) printf(format string, args ...any) {
	l.lines = append(l.lines, strings.Split(strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "\n")...)
}

// warn is RESTEnvironment's log_warn inside a worker: a "WARN: " line that
// the task's end counts ("TASK WARNINGS: n", exit status "WARNINGS: n").
func (l *taskLog) warn(format string, args ...any) {
	l.printf("WARN: "+format, args...)
	l.warnings++
}

// upidRe is PVE::Tools::upid_decode's pattern.
var upidRe = regexp.MustCompile(`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$`)

// startTask runs a worker: work's effect is applied now unless a failure
// was armed with FailNextTask or work fails, in which case the task's exit
// status is the error. It returns the UPID.
func (c *call) startTask(typ, id string, work func(l *taskLog) error) string {
	node := c.node
	if node == "" {
		node = c.s.defaultNode()
	}
	s := c.s
	s.pid++
	now := s.now()
	t := &task{node: node, typ: typ, id: id, user: c.auth, pid: s.pid, pstart: s.pid * 7, start: now}
	t.upid = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, t.pid, t.pstart, now.Unix(), typ, id, c.auth)
	l := &taskLog{}
	if msg, armed := c.srv.faults.takeTaskFailure(typ, id); armed {
		t.exit = msg
	} else if err := work(l); err != nil {
		t.exit = strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", " ")
	} else {
		t.exit = "OK"
	}
	switch {
	case t.exit == "OK" && l.warnings > 0:
		t.exit = fmt.Sprintf("WARNINGS: %d", l.warnings)
		l.printf("TASK %s", t.exit)
	case t.exit == "OK":
		l.printf("TASK OK")
	default:
		l.printf("TASK ERROR: %s", t.exit)
	}
	t.log = l.lines
	t.end = now.Add(c.srv.cfg.taskTime)
	s.tasks[t.upid] = t
	return t.upid
}

func (t *task) running(now time.Time) bool { return now.Before(t.end) }

func taskRoutes() []*route {
	schema := []param{{name: "node", format: fmtNode}, req("upid", tString)}
	logSchema := append(append([]param{}, schema...), param{name: "start", typ: tInt, optional: true, min: &zero},
		param{name: "limit", typ: tInt, optional: true, min: &zero}, opt("download", tBool))
	return []*route{
		{method: "GET", path: "/nodes/{node}/tasks/{upid}", schema: schema, handle: taskIndex},
		{method: "GET", path: "/nodes/{node}/tasks/{upid}/status", schema: schema, handle: taskStatus},
		{method: "GET", path: "/nodes/{node}/tasks/{upid}/log", schema: logSchema, handle: taskLogLines},
		{method: "DELETE", path: "/nodes/{node}/tasks/{upid}", schema: schema, handle: stopTask},
	}
}

// lookupTask decodes the UPID, finds the task and checks that the caller
// owns it (a token sees its own tasks, a user its own and its tokens') or
// holds priv on /nodes/<node>. An unknown UPID is "no such task".
func (c *call) lookupTask(priv string) (*task, *apiError) {
	t, err := c.findTask(priv)
	if err == nil && t == nil {
		return nil, paramErr("upid", "no such task")
	}
	return t, err
}

// findTask is lookupTask for the log, which PVE reads without first asking
// whether the task exists: an unknown but well-formed UPID passes the
// ownership check on the user it names, and the task is nil.
func (c *call) findTask(priv string) (*task, *apiError) {
	m := upidRe.FindStringSubmatch(c.p["upid"])
	if m == nil {
		return nil, paramErr("upid", "unable to parse worker upid")
	}
	user := m[8]
	owner, _, _ := pveacl.ParseTokenID(user)
	if c.auth != user && c.auth != owner {
		if err := c.require("/nodes/"+c.node, priv); err != nil {
			return nil, err
		}
	}
	return c.s.tasks[c.p["upid"]], nil
}

// taskIndex is Tasks.pm's upid_index, which neither decodes the UPID nor
// checks anything.
func taskIndex(*call) (any, *apiError) {
	return []map[string]string{{"name": "log"}, {"name": "status"}}, nil
}

func taskStatus(c *call) (any, *apiError) {
	t, err := c.lookupTask("Sys.Audit")
	if err != nil {
		return nil, err
	}
	out := map[string]any{"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart,
		"starttime": t.start.Unix(), "type": t.typ, "id": t.id, "user": t.user, "status": "stopped"}
	if uid, name, err := pveacl.ParseTokenID(t.user); err == nil {
		out["user"], out["tokenid"] = uid, name
	}
	if t.running(c.s.now()) {
		out["status"] = "running"
	} else {
		out["exitstatus"] = t.exit
		out["endtime"] = t.end.Unix()
	}
	return out, nil
}

// taskLogLines answers as Tasks.pm's read_task_log with
// PVE::Tools::dump_logfile: limit=0 reads to the end, an empty log reads as
// the one line "no content", and the log of an unknown UPID is the one line
// of the failed open, with 200 OK.
func taskLogLines(c *call) (any, *apiError) {
	t, err := c.findTask("Sys.Audit")
	if err != nil {
		return nil, err
	}
	if c.p.flag("download", false) && (c.p.has("start") || c.p.has("limit")) {
		return nil, die("'download' cannot be used together with 'start' or 'limit' parameters")
	}
	if t == nil {
		total := 1
		c.total = &total
		return []map[string]any{{"n": 1, "t": "unable to open file - No such file or directory"}}, nil
	}
	lines := t.log
	if t.running(c.s.now()) {
		lines = lines[:len(lines)-1] // the final TASK line appears when it ends
	}
	start, limit := c.p.int("start"), 50
	if c.p.has("limit") {
		limit = c.p.int("limit")
	}
	out := []map[string]any{}
	for i := start; i < len(lines) && (limit == 0 || len(out) < limit); i++ {
		out = append(out, map[string]any{"n": i + 1, "t": lines[i]})
	}
	total := len(lines)
	if total == 0 {
		total = 1
		out = append(out, map[string]any{"n": 1, "t": "no content"})
	}
	c.total = &total
	return out, nil
}

func stopTask(c *call) (any, *apiError) {
	t, err := c.lookupTask("Sys.Modify")
	if err != nil {
		return nil, err
	}
	if now := c.s.now(); t.running(now) {
		t.end, t.exit = now, "interrupted by signal"
		t.log = append(t.log[:len(t.log)-1], "TASK ERROR: interrupted by signal")
	}
	return nil, nil
}
