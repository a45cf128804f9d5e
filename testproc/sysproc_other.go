//go:build !linux

package testproc

import "syscall"

// sysProcAttr puts the process in a process group of its own. There is no
// parent-death signal outside Linux: a test that crashes there leaves its
// processes running until they are stopped by pid.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
