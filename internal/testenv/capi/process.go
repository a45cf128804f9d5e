package capi

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

const stopTimeout = 30 * time.Second

// Manager is one running manager process.
type Manager struct {
	name, log  string
	cmd        *exec.Cmd
	healthPort int
	done       chan struct{}
	waitErr    error
	// release gives back what the manager held beyond its process (the
	// lock of a fixed port) once it has exited; nil when nothing.
	release func()
}

// StartProcess starts bin with args in the environment managerEnv makes
// of env, its output going to the file log. On Linux the process dies with
// the process that started it (sysProcAttr). Stop stops it by pid.
func StartProcess(name, bin string, args, env []string, log string) (*Manager, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = managerEnv(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	m := &Manager{name: name, log: log, cmd: cmd, done: make(chan struct{})}
	go func() {
		m.waitErr = cmd.Wait()
		close(m.done)
	}()
	return m, nil
}

// managerEnv is base (the test process's environment) without the
// variables a manager must not inherit, with set (KEY=value) added. Left
// out are PROXMOX_*: capmox takes PROXMOX_URL, PROXMOX_TOKEN and
// PROXMOX_SECRET as one client for every cluster, in place of each
// ProxmoxCluster's credentialsRef, and cannot start when that client
// cannot reach its URL. Also left out are the keys of set, so that set wins.
func managerEnv(base []string, set ...string) []string {
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PROXMOX_") || slices.ContainsFunc(set, func(s string) bool { return strings.HasPrefix(s, k+"=") }) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, set...)
}

// Pid is the manager's process id.
func (m *Manager) Pid() int { return m.cmd.Process.Pid }

// Log returns everything the manager has written so far.
func (m *Manager) Log() string {
	data, _ := os.ReadFile(m.log)
	return string(data)
}

// LogTail returns the last n lines of the manager's output.
func (m *Manager) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(m.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Exited says whether the process has ended.
func (m *Manager) Exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

func (m *Manager) waitReady(webhookPort, healthPort int, caPEM []byte) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		if m.Exited() {
			return fmt.Errorf("%s (pid %d) exited before it was ready (%v); the last lines of its log:\n%s",
				m.name, m.Pid(), m.waitErr, m.LogTail(logTailLines))
		}
		if Serving(webhookPort, healthPort, caPEM) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (pid %d) not ready after %s; the last lines of its log:\n%s",
				m.name, m.Pid(), readyTimeout, m.LogTail(logTailLines))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop sends SIGTERM to the manager's process id, waits for it to exit,
// and kills it when it has not after 30 seconds; once it is gone, it
// gives back the fixed port the manager held (capmox's). A manager that
// had already exited on its own is reported with its log tail.
func (m *Manager) Stop() error {
	defer m.releaseIfExited()
	if m.Exited() {
		return fmt.Errorf("%s (pid %d) had exited by itself (%v); the last lines of its log:\n%s",
			m.name, m.Pid(), m.waitErr, m.LogTail(logTailLines))
	}
	if err := syscall.Kill(m.Pid(), syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cannot stop %s (pid %d): %w", m.name, m.Pid(), err)
	}
	select {
	case <-m.done:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := syscall.Kill(m.Pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cannot kill %s (pid %d): %w", m.name, m.Pid(), err)
	}
	<-m.done
	return fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM and was killed", m.name, m.Pid(), stopTimeout)
}

// releaseIfExited calls release once the process is gone: a port is not
// given back while a process that may still hold it runs.
func (m *Manager) releaseIfExited() {
	if m.release != nil && m.Exited() {
		m.release()
		m.release = nil
	}
}
