package network_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTicks = 100

// cpuUse is the CPU time used so far by this process and by each of its
// child processes (the kube-apiserver and etcd a test started), by command
// name.
type cpuUse struct {
	self     time.Duration
	children map[string]time.Duration
}

// cpuNow reads cpuUse from /proc; ok is false where there is no /proc.
func cpuNow() (u cpuUse, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return u, false
	}
	u.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	u.children = map[string]time.Duration{}
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(tasks) == 0 {
		return u, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(b)) {
			if name, cpu, ok := procCPU(pid); ok {
				u.children[name] += cpu
			}
		}
	}
	return u, true
}

// since is the CPU time used between before and u.
func (u cpuUse) since(before cpuUse) cpuUse {
	d := cpuUse{self: u.self - before.self, children: map[string]time.Duration{}}
	for name, cpu := range u.children {
		d.children[name] = cpu - before.children[name]
	}
	return d
}

// child is the CPU time of the child processes named name.
func (u cpuUse) child(name string) time.Duration { return u.children[name] }

// procCPU is the command name and the user and system time of process
// pid, from its stat file.
func procCPU(pid string) (string, time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", 0, false
	}
	// The command name is in parentheses and may hold spaces; the fields
	// after it are plain.
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 13 {
		return "", 0, false
	}
	utime, errU := strconv.ParseInt(fields[11], 10, 64)
	stime, errS := strconv.ParseInt(fields[12], 10, 64)
	if errU != nil || errS != nil {
		return "", 0, false
	}
	return s[open+1 : end], time.Duration(utime+stime) * time.Second / clockTicks, true
}
