package pveapitest_test

import (
	"context"
	"fmt"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi/pveapitest"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestOldPathIsTheFake: a test written against pveapi/pveapitest gets the
// fake of package pvefake, and its values pass where pvefake's are wanted.
func TestOldPathIsTheFake(t *testing.T) {
	srv := pveapitest.NewServer(t, pveapitest.WithNodes("pve1", "pve2"))
	fake := func(*pvefake.Server) {}
	fake(srv) // the old path's Server is the fake's
	if err := srv.AddVM(pveapitest.VMSpec{VMID: 100, Node: "pve2", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	var v proxmox.Version
	if err := srv.Client().Get(context.Background(), "/version", &v); err != nil {
		t.Fatal(err)
	}
	if got, want := srv.URL[len(srv.URL)-len(pveapitest.BasePath):], pvefake.BasePath; got != want {
		t.Errorf("URL ends in %s, want %s", got, want)
	}
	if _, node, ok := srv.VMConfig(100); !ok || node != "pve2" {
		t.Errorf("VM 100 is on %q (%v), want pve2", node, ok)
	}
}

// ExampleNew starts the fake under its old import path and reads the
// version through go-proxmox.
func ExampleNew() {
	srv, err := pveapitest.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	v, err := srv.Client().Version(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Release)
	// Output: 9.1
}
