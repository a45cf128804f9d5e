//go:build linux

package ovnlab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// startTimeout bounds how long a daemon may take to become ready.
const startTimeout = 20 * time.Second

// stopTimeout is how long a daemon gets to exit after SIGTERM before SIGKILL.
const stopTimeout = 5 * time.Second

// Daemon is one long-running process of the lab, started in the foreground
// so that its pid is known and it can be stopped by pid.
type Daemon struct {
	// Name says which daemon this is, e.g. "ovs-vswitchd of chassis ch1".
	Name string
	// Log is the daemon's log file.
	Log string
	// Pidfile is where the daemon writes its pid.
	Pidfile string

	path   string
	args   []string
	env    []string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	ready  func() error
}

// start runs the daemon and waits until ready reports nil. A daemon that
// exits or does not become ready is reported by name with its log tail.
func (d *Daemon) start() error {
	cmd := exec.Command(d.path, d.args...)
	cmd.Dir = d.dir
	cmd.Env = append(os.Environ(), d.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.OpenFile(filepath.Join(d.dir, filepath.Base(d.Log)+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot run %s: %w", d.Name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	d.cmd, d.exited = cmd, exited
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("%s exited at start (%s); log tail:\n%s", d.Name, cmd.ProcessState, d.Tail(15))
		default:
		}
		err := d.ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			d.Stop()
			return fmt.Errorf("%s was not ready within %s: %v; log tail:\n%s", d.Name, startTimeout, err, d.Tail(15))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pid is the process id, 0 before the first start.
func (d *Daemon) Pid() int {
	if d.cmd == nil || d.cmd.Process == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

// Running reports whether the process is alive.
func (d *Daemon) Running() bool {
	if d.exited == nil {
		return false
	}
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits for the process to end (SIGKILL after 5s).
func (d *Daemon) Stop() {
	if !d.Running() {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(stopTimeout):
		d.Kill()
	}
}

// Kill sends SIGKILL, as a crash would, and waits for the process to end.
func (d *Daemon) Kill() {
	if !d.Running() {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// Wait waits up to timeout for the process to end by itself.
func (d *Daemon) Wait(timeout time.Duration) error {
	if !d.Running() {
		return nil
	}
	select {
	case <-d.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s still runs after %s", d.Name, timeout)
	}
}

// Tail returns the last n lines of the daemon's log and of its output.
func (d *Daemon) Tail(n int) string {
	var parts []string
	for _, f := range []string{d.Log, filepath.Join(d.dir, filepath.Base(d.Log)+".out")} {
		b, err := os.ReadFile(f)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				parts = append(parts, err.Error())
			}
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		if s := strings.Join(lines, "\n"); s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "(empty log)"
	}
	return strings.Join(parts, "\n")
}
