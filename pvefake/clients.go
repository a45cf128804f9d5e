package pvefake

import (
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

// NewServer starts a server (PVE 9, one node "pve", storages "local" and
// "local-lvm" unless options say otherwise) and stops it when the test
// ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	srv, err := New(opts...)
	if err != nil {
		t.Fatalf("cannot start the fake Proxmox VE API: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv
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
