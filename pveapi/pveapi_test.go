package pveapi_test

import (
	"context"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestGoProxmoxClient: go-proxmox's client is a Client, and through the
// interface it reads PVE's version from the fake.
func TestGoProxmoxClient(t *testing.T) {
	srv := pvefake.NewServer(t)
	var c pveapi.Client = srv.Client()
	var v proxmox.Version
	if err := c.Get(context.Background(), "/version", &v); err != nil {
		t.Fatalf("GET /version through pveapi.Client: %v", err)
	}
	if v.Release == "" {
		t.Errorf("GET /version answered %+v, want a release", v)
	}
}
