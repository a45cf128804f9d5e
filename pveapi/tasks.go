package pveapi

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// TaskStatus is GET /nodes/{node}/tasks/{upid}/status.
type TaskStatus struct {
	Status     string `json:"status"`
	ExitStatus string `json:"exitstatus"`
	Type       string `json:"type"`
	StartTime  int64  `json:"starttime"`
}

// Running says whether the task has not stopped yet.
func (t TaskStatus) Running() bool { return t.Status == "running" || t.Status == "" }

// Succeeded is PVE's rule: OK, or WARNINGS: n, which PVE counts as success.
func (t TaskStatus) Succeeded() bool {
	return t.ExitStatus == "OK" || strings.HasPrefix(t.ExitStatus, "WARNINGS:")
}

// Started is the task's start time.
func (t TaskStatus) Started() time.Time { return time.Unix(t.StartTime, 0) }

// nodeName is a node name in a UPID: a single path segment that starts
// with a letter.
var nodeName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)

// UPIDNode returns the node a UPID ("UPID:node:pid:pstart:start:type:id:user:")
// names; ok is false when upid is not one.
func UPIDNode(upid string) (node string, ok bool) {
	rest, found := strings.CutPrefix(upid, "UPID:")
	if !found {
		return "", false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 8 || parts[7] != "" || !nodeName.MatchString(parts[0]) {
		return "", false
	}
	for _, p := range parts[1:4] {
		if _, err := strconv.ParseUint(p, 16, 64); err != nil {
			return "", false
		}
	}
	return parts[0], true
}

// TaskPath is the API path of a task: /nodes/{node}/tasks/{upid}, with the
// node the UPID names (node when it names none).
func TaskPath(node, upid string) string {
	if n, ok := UPIDNode(upid); ok {
		node = n
	}
	return Path("nodes", node, "tasks", upid)
}

// Tasks follows PVE tasks through a Client.
type Tasks struct {
	Client Client
	// Interval between two status reads; 0 means 200 ms.
	Interval time.Duration
}

// Wait polls the task's status until it stops and returns the last
// status read. A task that stopped with a failure is no error: the
// status says so (Succeeded). The error is for not knowing: a status that
// cannot be read, or ctx ending first; the task may then still run.
// onLog, when set, receives the task's log lines as they appear.
func (w Tasks) Wait(ctx context.Context, node, upid string, onLog func(string)) (TaskStatus, error) {
	path := TaskPath(node, upid)
	interval := w.Interval
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	seen := 0
	for {
		var st TaskStatus
		if err := w.Client.Get(ctx, path+"/status", &st); err != nil {
			return st, fmt.Errorf("cannot read the status of task %s (GET %s/status): %w", termsafe.Cut(upid), termsafe.Cut(path), err)
		}
		if onLog != nil {
			seen = w.follow(ctx, path, seen, onLog)
		}
		if !st.Running() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("stopped waiting for task %s: %w", termsafe.Cut(upid), ctx.Err())
		case <-time.After(interval):
		}
	}
}

// Log returns the task's whole log, one line per item.
func (w Tasks) Log(ctx context.Context, node, upid string) ([]string, error) {
	var out []string
	path := TaskPath(node, upid)
	for {
		lines, err := w.page(ctx, path, len(out))
		if err != nil {
			return out, fmt.Errorf("cannot read the log of task %s (GET %s/log): %w", termsafe.Cut(upid), termsafe.Cut(path), err)
		}
		for _, l := range lines {
			out = append(out, l.T)
		}
		if len(lines) < logPage {
			return out, nil
		}
	}
}

const logPage = 500

// logLine is an item of GET .../tasks/{upid}/log.
type logLine struct {
	N int    `json:"n"`
	T string `json:"t"`
}

func (w Tasks) page(ctx context.Context, path string, start int) ([]logLine, error) {
	var lines []logLine
	q := url.Values{"start": {strconv.Itoa(start)}, "limit": {strconv.Itoa(logPage)}}
	err := w.Client.Get(ctx, path+"/log?"+q.Encode(), &lines)
	return lines, err
}

// follow passes the log lines after the first seen to onLog and returns
// the new count. Log lines are a courtesy: a failed read is retried at the
// next poll.
func (w Tasks) follow(ctx context.Context, path string, seen int, onLog func(string)) int {
	for {
		lines, err := w.page(ctx, path, seen)
		if err != nil || len(lines) == 0 {
			return seen
		}
		for _, l := range lines {
			onLog(l.T)
		}
		seen += len(lines)
		if len(lines) < logPage {
			return seen
		}
	}
}
