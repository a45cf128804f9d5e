package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
)

// SessionFile is the file of a lab's Dir that says the lab runs: its
// supervisor wrote it once everything served and removes it when it stops.
const SessionFile = "lab.json"

// Session is what a running lab tells other processes about itself.
type Session struct {
	// Pid is the supervisor's process id: the process that started the
	// lab and stops it on SIGTERM.
	Pid    int         `json:"pid"`
	Capmox capi.Capmox `json:"capmox"`
	// Processes are the supervisor's child processes when the lab came
	// up, or when it last started or stopped a Pod, by pid, with the name
	// the kernel gives each (comm).
	Processes []Process `json:"processes"`
	// Pods are the containers of the management cluster's Deployments the
	// lab runs (a tenant's CCM and CSI controller), by pid.
	Pods []PodProcess `json:"pods,omitempty"`
}

// PodProcess is one running container of a Deployment the lab runs.
type PodProcess struct {
	Namespace  string `json:"namespace"`
	Deployment string `json:"deployment"`
	Container  string `json:"container"`
	Pid        int    `json:"pid"`
}

// Process is one process of a lab.
type Process struct {
	Pid  int    `json:"pid"`
	Name string `json:"name"`
}

// WriteSession writes the session file of the lab, listing the calling
// process as the supervisor and its child processes.
func (l *Lab) WriteSession() error {
	s := Session{Pid: os.Getpid(), Capmox: l.Capmox, Processes: Children(os.Getpid())}
	for _, p := range l.Pods() {
		for i, c := range p.Containers {
			s.Pods = append(s.Pods, PodProcess{Namespace: p.Namespace, Deployment: p.Deployment, Container: c.Container, Pid: p.Pids[i]})
		}
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(l.Dir, SessionFile)
	if err := os.WriteFile(path+".tmp", append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// ErrNoLab is a Dir without a running lab.
var ErrNoLab = errors.New("no lab runs")

// ReadSession reads the session of the lab in dir. A missing file, or one
// whose supervisor has gone, is ErrNoLab.
func ReadSession(dir string) (Session, error) {
	var s Session
	data, err := os.ReadFile(filepath.Join(dir, SessionFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("%w in %s", ErrNoLab, dir)
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Join(dir, SessionFile), err)
	}
	if !Alive(s.Pid) {
		return s, fmt.Errorf("%w in %s: its supervisor (pid %d) is gone", ErrNoLab, dir, s.Pid)
	}
	return s, nil
}

// Attach returns the lab that runs in dir, for another process to apply
// tenants to and read: its API servers' clients and its Proxmox VE. Stop
// on it stops nothing.
func Attach(dir string) (*Lab, error) {
	s, err := ReadSession(dir)
	if err != nil {
		return nil, err
	}
	l := &Lab{Capmox: s.Capmox, Dir: dir, log: func(string) {}}
	if l.Mgmt, l.Client, err = attachAPI(filepath.Join(dir, MgmtKubeconfig)); err != nil {
		return nil, err
	}
	if l.Tenant, l.TenantClient, err = attachAPI(filepath.Join(dir, TenantKubeconfig)); err != nil {
		return nil, err
	}
	st, err := pvelab.ReadState(filepath.Join(dir, ProxmoxState))
	if err != nil {
		return nil, err
	}
	return l, l.useProxmoxState(st)
}

// SetLog sends the lab's step lines to log.
func (l *Lab) SetLog(log func(string)) { l.log = log }

func attachAPI(kubeconfig string) (*rest.Config, client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	return cfg, c, err
}

// Children lists the child processes of pid, from /proc.
func Children(pid int) []Process {
	var out []Process
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			out = append(out, Process{Pid: child, Name: Comm(child)})
		}
	}
	slices.SortFunc(out, func(a, b Process) int { return a.Pid - b.Pid })
	return out
}

// Comm is the kernel's name of process pid, "" when it is gone.
func Comm(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// Alive says whether process pid runs (a zombie does not).
func Alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
