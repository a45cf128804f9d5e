package testproc

import "syscall"

// sysProcAttr puts the process in a process group of its own (a Ctrl-C
// meant for the test does not reach it; it is stopped by pid) and, when
// dieWithTest, has it die with the thread that starts it (Linux's
// parent-death signal).
func sysProcAttr(dieWithTest bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if dieWithTest {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}
