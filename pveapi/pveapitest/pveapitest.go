// Package pveapitest is the old import path of the Proxmox VE API fake,
// kept for the tests that import it: every name here is the one of package
// pvefake (github.com/pxsubstrate/pxsubstrate/pvefake), where the fake now
// lives and is documented. A pveapitest.Server is a pvefake.Server, so code
// written against either path works with the other. New code imports
// pvefake.
package pveapitest

import (
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// BasePath is pvefake.BasePath.
const BasePath = pvefake.BasePath

// DefaultHAFenceDelay is pvefake.DefaultHAFenceDelay.
const DefaultHAFenceDelay = pvefake.DefaultHAFenceDelay

// RootTokenName is pvefake.RootTokenName.
const RootTokenName = pvefake.RootTokenName

// Server is pvefake.Server: the running fake.
type Server = pvefake.Server

// Option is pvefake.Option.
type Option = pvefake.Option

// BootError is pvefake.BootError.
type BootError = pvefake.BootError

// BootHook is pvefake.BootHook.
type BootHook = pvefake.BootHook

// BootingVM is pvefake.BootingVM.
type BootingVM = pvefake.BootingVM

// Downloader is pvefake.Downloader.
type Downloader = pvefake.Downloader

// Fault is pvefake.Fault.
type Fault = pvefake.Fault

// Interface is pvefake.Interface.
type Interface = pvefake.Interface

// PCIDevice is pvefake.PCIDevice.
type PCIDevice = pvefake.PCIDevice

// PCIMappingSpec is pvefake.PCIMappingSpec.
type PCIMappingSpec = pvefake.PCIMappingSpec

// Request is pvefake.Request.
type Request = pvefake.Request

// StorageSpec is pvefake.StorageSpec.
type StorageSpec = pvefake.StorageSpec

// TaskInfo is pvefake.TaskInfo.
type TaskInfo = pvefake.TaskInfo

// TokenSpec is pvefake.TokenSpec.
type TokenSpec = pvefake.TokenSpec

// UserSpec is pvefake.UserSpec.
type UserSpec = pvefake.UserSpec

// VMSpec is pvefake.VMSpec.
type VMSpec = pvefake.VMSpec

// VolumeInfo is pvefake.VolumeInfo.
type VolumeInfo = pvefake.VolumeInfo

// VolumeSpec is pvefake.VolumeSpec.
type VolumeSpec = pvefake.VolumeSpec

// NewServer is pvefake.NewServer: a fake for one test, stopped on cleanup.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return pvefake.NewServer(t, opts...)
}

// New is pvefake.New: a fake for a program, which closes it itself.
func New(opts ...Option) (*Server, error) { return pvefake.New(opts...) }

// WithBootHook is pvefake.WithBootHook.
func WithBootHook(h BootHook) Option { return pvefake.WithBootHook(h) }

// WithClock is pvefake.WithClock.
func WithClock(now func() time.Time) Option { return pvefake.WithClock(now) }

// WithCluster is pvefake.WithCluster.
func WithCluster(name string) Option { return pvefake.WithCluster(name) }

// WithDownloader is pvefake.WithDownloader.
func WithDownloader(d Downloader) Option { return pvefake.WithDownloader(d) }

// WithHAFenceDelay is pvefake.WithHAFenceDelay.
func WithHAFenceDelay(d time.Duration) Option { return pvefake.WithHAFenceDelay(d) }

// WithLatency is pvefake.WithLatency.
func WithLatency(d time.Duration) Option { return pvefake.WithLatency(d) }

// WithNodes is pvefake.WithNodes.
func WithNodes(names ...string) Option { return pvefake.WithNodes(names...) }

// WithRelease is pvefake.WithRelease.
func WithRelease(release string) Option { return pvefake.WithRelease(release) }

// WithTLS is pvefake.WithTLS.
func WithTLS() Option { return pvefake.WithTLS() }

// WithTaskDuration is pvefake.WithTaskDuration.
func WithTaskDuration(d time.Duration) Option { return pvefake.WithTaskDuration(d) }

// WithVersion is pvefake.WithVersion.
func WithVersion(v pveacl.Version) Option { return pvefake.WithVersion(v) }

// ParseAuthHeader is pvefake.ParseAuthHeader.
func ParseAuthHeader(h string) (string, bool) { return pvefake.ParseAuthHeader(h) }

// ParseHANodeList is pvefake.ParseHANodeList.
func ParseHANodeList(v string) (map[string]int, error) { return pvefake.ParseHANodeList(v) }

// ParseHAResourceList is pvefake.ParseHAResourceList.
func ParseHAResourceList(v string) ([]string, error) { return pvefake.ParseHAResourceList(v) }

// SplitTokenValue is pvefake.SplitTokenValue.
func SplitTokenValue(v string) (tokenID, secret string, ok bool) { return pvefake.SplitTokenValue(v) }
