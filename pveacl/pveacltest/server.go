package pveacltest

import (
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/internal/fakes/pve"
)

// Types of the fake, usable from outside this module.
type (
	// Option configures NewServer.
	Option = pve.Option
	// StorageSpec describes a storage for AddStorage.
	StorageSpec = pve.StorageSpec
	// UserSpec describes a user for AddUser.
	UserSpec = pve.UserSpec
	// TokenSpec describes an API token for AddToken.
	TokenSpec = pve.TokenSpec
	// VMSpec describes a guest for AddVM.
	VMSpec = pve.VMSpec
	// VolumeSpec describes a volume for AddVolume.
	VolumeSpec = pve.VolumeSpec
	// VolumeInfo is a stored volume.
	VolumeInfo = pve.VolumeInfo
	// TaskInfo is a recorded worker task.
	TaskInfo = pve.TaskInfo
	// Fault is an injected failure for InjectError.
	Fault = pve.Fault
	// Request is a request the server received.
	Request = pve.Request
	// Downloader fetches URLs for download-url.
	Downloader = pve.Downloader
)

// Options of NewServer.
var (
	WithVersion      = pve.WithVersion
	WithTLS          = pve.WithTLS
	WithLatency      = pve.WithLatency
	WithTaskDuration = pve.WithTaskDuration
	WithCluster      = pve.WithCluster
	WithNodes        = pve.WithNodes
	WithClock        = pve.WithClock
	WithDownloader   = pve.WithDownloader
)

// Server is a running fake Proxmox VE API. URL is the base URL including
// /api2/json; RootTokenID and RootSecret authenticate as root@pam. The
// seeding methods (AddUser, AddToken, AddStorage, AddVM, SetACL, ...) set
// state without permission checks; the fault hooks (InjectError,
// FailNextTask, SetLatency) and the request log (Requests,
// MutatingRequests) come from the same value.
type Server struct {
	*pve.Server
}

// NewServer starts a server (PVE 9, one node "pve", storages "local" and
// "local-lvm" unless options say otherwise) and stops it when the test
// ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	srv, err := pve.New(opts...)
	if err != nil {
		t.Fatalf("cannot start the fake Proxmox VE API: %v", err)
	}
	t.Cleanup(srv.Close)
	return &Server{Server: srv}
}

// Client returns a go-proxmox client authenticated with the root token.
func (s *Server) Client(opts ...proxmox.Option) *proxmox.Client {
	return s.TokenClient(s.RootTokenID, s.RootSecret, opts...)
}

// TokenClient returns a go-proxmox client authenticated with an API token.
// It trusts the server's certificate and logs nothing.
func (s *Server) TokenClient(tokenID, secret string, opts ...proxmox.Option) *proxmox.Client {
	base := []proxmox.Option{proxmox.WithHTTPClient(s.HTTPClient()), proxmox.WithAPIToken(tokenID, secret),
		proxmox.WithLogger(quiet{})}
	return proxmox.NewClient(s.URL, append(base, opts...)...)
}

// quiet drops go-proxmox's log lines, which at debug level include
// response bodies with token secrets.
type quiet struct{}

func (quiet) Debugf(string, ...any) {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Infof(string, ...any)  {}
func (quiet) Warnf(string, ...any)  {}
