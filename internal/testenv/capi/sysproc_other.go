//go:build !linux

package capi

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: a test that
// crashes there leaves its managers running until they are stopped by
// pid.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
