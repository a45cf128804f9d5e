package testproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of a Process's timing.
const (
	DefaultStartTimeout = 20 * time.Second
	DefaultPoll         = 20 * time.Millisecond
	DefaultStopTimeout  = 5 * time.Second
	// tailLines is how many lines of each log an error shows.
	tailLines = 20
)

// Process is one child process of a test. Fill in its fields, then Start
// it; Start may be called again once it has ended (a restart).
type Process struct {
	// Name says which process this is in errors, such as "ovsdb-server of
	// NB member 1".
	Name string
	// Path is the program, Args its arguments, Dir its working folder
	// (empty: the test's).
	Path string
	Args []string
	Dir  string
	// Env is its whole environment; nil means the test process's.
	Env []string
	// Output is the file its standard output and standard error are
	// appended to (created when missing); empty discards them.
	Output string
	// Logs are files the process writes its log to itself (--log-file);
	// errors show their tails after Output's.
	Logs []string
	// Ready reports nil once the process serves. Start polls it every Poll
	// (default 20 ms) for up to StartTimeout (default 20 s); nil means
	// ready once started.
	Ready        func() error
	StartTimeout time.Duration
	Poll         time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL
	// (default 5 s).
	StopTimeout time.Duration
	// DieWithTest, on Linux, has the kernel kill the process when the
	// thread that started it ends, which in practice is when the test
	// binary dies: a crashed test leaves nothing behind. Leave it off in a
	// test that ends threads of its own (runtime.LockOSThread without
	// UnlockOSThread, as network-namespace code does), which would take
	// the process with them.
	DieWithTest bool
	// Launcher, when set, is called with what starts the process and must
	// call it: the process inherits what the calling thread has, such as
	// a network namespace of its own (and with DieWithTest it dies when
	// that thread ends). nil starts it from the calling goroutine.
	Launcher func(start func() error) error

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	// stopped says that Stop or Kill ended the process, not itself.
	stopped bool
}

// Start runs the process and waits until Ready reports nil. A process
// that exits first, or is not ready within StartTimeout, is named in the
// error with the tail of its logs; one that is not ready is killed.
func (p *Process) Start() error {
	if p.Running() {
		return fmt.Errorf("cannot start %s: it runs (pid %d)", p.Name, p.Pid())
	}
	if err := p.launch(); err != nil {
		return err
	}
	timeout, poll := or(p.StartTimeout, DefaultStartTimeout), or(p.Poll, DefaultPoll)
	deadline := time.Now().Add(timeout)
	for {
		if !p.Running() {
			return fmt.Errorf("%s (pid %d) exited at start (%s); the last lines of its log:\n%s", p.Name, p.Pid(), p.state(), p.Tail(tailLines))
		}
		err := error(nil)
		if p.Ready != nil {
			err = p.Ready()
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			p.Kill()
			return fmt.Errorf("%s (pid %d) was not ready within %s: %v; the last lines of its log:\n%s", p.Name, p.Pid(), timeout, err, p.Tail(tailLines))
		}
		time.Sleep(poll)
	}
}

func (p *Process) launch() error {
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Dir, cmd.Env = p.Dir, p.Env
	cmd.SysProcAttr = sysProcAttr(p.DieWithTest)
	if p.Output != "" {
		f, err := os.OpenFile(p.Output, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("cannot start %s: %w", p.Name, err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	start := cmd.Start
	if p.Launcher != nil {
		start = func() error { return p.Launcher(cmd.Start) }
	}
	if err := start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.waitErr, p.stopped = cmd, exited, nil, false
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Pid is the process id of the last start, 0 before the first.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *Process) done() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Running reports whether the process has started and not ended.
func (p *Process) Running() bool {
	d := p.done()
	if d == nil {
		return false
	}
	select {
	case <-d:
		return false
	default:
		return true
	}
}

// Exited reports whether the process has started and ended.
func (p *Process) Exited() bool { return p.done() != nil && !p.Running() }

// Err is how the process ended: nil while it runs or after exit status 0,
// else what waiting for it returned (such as "signal: killed").
func (p *Process) Err() error {
	if p.Running() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

func (p *Process) state() string {
	if err := p.Err(); err != nil {
		return err.Error()
	}
	return "exit status 0"
}

// Stop ends the process: SIGTERM to its process id, then SIGKILL when it
// has not ended after StopTimeout. The error says when the process had
// ended by itself before (with its log tail), or had to be killed; Stop
// of a process that was never started, or that Stop or Kill ended, is nil.
func (p *Process) Stop() error {
	d := p.done()
	if d == nil {
		return nil
	}
	if !p.Running() {
		p.mu.Lock()
		stopped := p.stopped
		p.mu.Unlock()
		if stopped {
			return nil
		}
		return fmt.Errorf("%s (pid %d) had exited by itself (%s); the last lines of its log:\n%s", p.Name, p.Pid(), p.state(), p.Tail(tailLines))
	}
	p.markStopped()
	if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cannot stop %s (pid %d): %w", p.Name, p.Pid(), err)
	}
	timeout := or(p.StopTimeout, DefaultStopTimeout)
	select {
	case <-d:
		return nil
	case <-time.After(timeout):
	}
	p.Kill()
	return fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM and was killed", p.Name, p.Pid(), timeout)
}

// Kill sends SIGKILL, as a crash would, and waits for the process to end.
func (p *Process) Kill() {
	if !p.Running() {
		return
	}
	p.markStopped()
	_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
	<-p.done()
}

func (p *Process) markStopped() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// Wait waits up to timeout for the process to end by itself.
func (p *Process) Wait(timeout time.Duration) error {
	d := p.done()
	if d == nil {
		return nil
	}
	select {
	case <-d:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s (pid %d) still runs after %s", p.Name, p.Pid(), timeout)
	}
}

// ReadOutput returns everything the process has written to Output.
func (p *Process) ReadOutput() string {
	if p.Output == "" {
		return ""
	}
	data, _ := os.ReadFile(p.Output)
	return string(data)
}

// Tail returns the last n lines of each of Output and Logs that holds
// any, "(empty log)" when none does.
func (p *Process) Tail(n int) string {
	var parts []string
	for _, f := range append([]string{p.Output}, p.Logs...) {
		if f == "" {
			continue
		}
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

// Logged is a Ready probe: it passes once the process has written line to
// Output, for a program whose only sign of serving is a log line.
func (p *Process) Logged(line string) func() error {
	return func() error {
		if !strings.Contains(p.ReadOutput(), line) {
			return fmt.Errorf("it has not logged %q yet", line)
		}
		return nil
	}
}
