package capi

import "syscall"

// sysProcAttr makes a manager die with the test binary (Linux's
// parent-death signal), so a crashed test leaves no manager behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
