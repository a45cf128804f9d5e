package capi

import (
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

const stopTimeout = 30 * time.Second

// Manager is one running manager process.
type Manager struct {
	*testproc.Process
	// release gives back what the manager held beyond its process (the
	// lock of a fixed port) once it has exited; nil when nothing.
	release func()
}

// Process describes bin, named name, run with args in the environment
// managerEnv makes of env, its output going to the file log, given 30
// seconds to stop; on Linux it dies with the process that started it.
// Set its Ready, then Start it.
func Process(name, bin string, args, env []string, log string) *testproc.Process {
	return &testproc.Process{Name: name, Path: bin, Args: args, Env: managerEnv(os.Environ(), env...), Output: log,
		StartTimeout: readyTimeout, Poll: 200 * time.Millisecond, StopTimeout: stopTimeout, DieWithTest: true}
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

// Stop stops the manager (testproc.Process.Stop) and, once it is gone,
// gives back the fixed port it held (capmox's).
func (m *Manager) Stop() error {
	defer m.releaseIfExited()
	return m.Process.Stop()
}

// releaseIfExited calls release once the process is gone: a port is not
// given back while a process that may still hold it runs.
func (m *Manager) releaseIfExited() {
	if m.release != nil && m.Exited() {
		m.release()
		m.release = nil
	}
}
