package testproc_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

func shell(t *testing.T, name, script string) *testproc.Process {
	t.Helper()
	sh, err := testproc.Find("sh")
	if err != nil {
		t.Fatal(err)
	}
	return &testproc.Process{Name: name, Path: sh, Args: []string{"-c", script},
		Output: filepath.Join(t.TempDir(), name+".out"), StartTimeout: 2 * time.Second}
}

// TestStopAndRestart: a process that serves is stopped by pid, started
// again, killed as a crash would, and stopped without an error each time
// the test ended it.
func TestStopAndRestart(t *testing.T) {
	p := shell(t, "sleeper", "echo up; exec sleep 60")
	starts := 0
	p.Ready = func() error {
		if strings.Count(p.ReadOutput(), "up\n") < starts {
			return errNotYet
		}
		return nil
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop before Start = %v", err)
	}
	starts++
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	first := p.Pid()
	if err := p.Start(); err == nil || !strings.Contains(err.Error(), "it runs") {
		t.Errorf("a second Start while it runs = %v", err)
	}
	if err := p.Stop(); err != nil || p.Running() || !p.Exited() {
		t.Fatalf("Stop = %v, running %v", err, p.Running())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("a second Stop = %v", err)
	}
	starts++
	if err := p.Start(); err != nil || p.Pid() == first {
		t.Fatalf("restart: %v, pid %d (was %d)", err, p.Pid(), first)
	}
	p.Kill()
	if p.Running() || p.Err() == nil || !strings.Contains(p.Err().Error(), "killed") {
		t.Errorf("after Kill: running %v, Err %v", p.Running(), p.Err())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after Kill = %v", err)
	}
	if got := p.ReadOutput(); got != "up\nup\n" {
		t.Errorf("output %q, want two starts' lines", got)
	}
}

// TestExitAtStart: a process that ends before it is ready is named with
// its exit status and the tail of its output.
func TestExitAtStart(t *testing.T) {
	p := shell(t, "failing daemon", "echo cannot open the database; exit 3")
	p.Ready = func() error { return errNotYet }
	err := p.Start()
	for _, want := range []string{"failing daemon (pid ", ") exited at start (exit status 3)", "cannot open the database"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Start = %v, want %q in it", err, want)
		}
	}
}

// TestNotReady: a process that runs but never passes its probe is killed
// and named with the probe's last answer.
func TestNotReady(t *testing.T) {
	p := shell(t, "deaf daemon", "exec sleep 60")
	p.StartTimeout = 100 * time.Millisecond
	p.Ready = func() error { return errNotYet }
	err := p.Start()
	if err == nil || !strings.Contains(err.Error(), "deaf daemon") || !strings.Contains(err.Error(), "was not ready within 100ms: not yet") {
		t.Errorf("Start = %v", err)
	}
	if p.Running() {
		t.Error("the process that was not ready still runs")
	}
}

// TestExitedByItself: Stop reports a process that ended on its own, and
// one that ignored SIGTERM and had to be killed.
func TestExitedByItself(t *testing.T) {
	p := shell(t, "short-lived", "echo bye; exit 0")
	if err := p.Start(); err != nil && !strings.Contains(err.Error(), "exited at start") {
		t.Fatal(err)
	}
	if err := p.Wait(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "had exited by itself (exit status 0)") || !strings.Contains(err.Error(), "bye") {
		t.Errorf("Stop = %v", err)
	}
	stubborn := shell(t, "stubborn", "trap '' TERM; echo ready; while :; do sleep 0.05; done")
	stubborn.Ready = func() error {
		if !strings.Contains(stubborn.ReadOutput(), "ready") {
			return errNotYet
		}
		return nil
	}
	stubborn.StopTimeout = 200 * time.Millisecond
	if err := stubborn.Start(); err != nil {
		t.Fatal(err)
	}
	if err := stubborn.Stop(); err == nil || !strings.Contains(err.Error(), "did not stop within 200ms of SIGTERM and was killed") {
		t.Errorf("Stop = %v", err)
	}
	if stubborn.Running() {
		t.Error("the stubborn process still runs")
	}
}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

var errNotYet error = notYet{}
