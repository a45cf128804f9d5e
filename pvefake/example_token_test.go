package pvefake_test

import (
	"context"
	"fmt"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// Example shows a tenant token that PVE would refuse: it may read the
// guest in its pool, not the other tenant's.
func Example() {
	t := &exampleT{}
	defer t.cleanup()
	srv := pvefake.NewServer(t)
	_ = srv.AddPool("alpha", "", nil, nil)
	_ = srv.AddPool("beta", "", nil, nil)
	_ = srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "alpha"})
	_ = srv.AddVM(pvefake.VMSpec{VMID: 200, Pool: "beta"})
	_ = srv.AddUser("alpha@pve", pvefake.UserSpec{})
	secret, _ := srv.AddToken("alpha@pve", "ccm", pvefake.TokenSpec{Privsep: true})
	_ = srv.SetACL("/pool/alpha", pveacl.KindUser, "alpha@pve", false, "PVEAuditor")
	_ = srv.SetACL("/pool/alpha", pveacl.KindToken, "alpha@pve!ccm", false, "PVEAuditor")

	c := srv.TokenClient("alpha@pve!ccm", secret)
	for _, vmid := range []int{100, 200} {
		_, err := c.NodeRef("pve").VirtualMachine(context.Background(), vmid)
		fmt.Printf("VM %d: %v forbidden=%v\n", vmid, err, proxmox.IsForbidden(err))
	}
	// Output:
	// VM 100: <nil> forbidden=false
	// VM 200: not authorized to access endpoint: 403 Permission check failed (/vms/200, VM.Audit) forbidden=true
}

type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()                        {}
func (t *exampleT) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
