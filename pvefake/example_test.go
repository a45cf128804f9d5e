package pvefake_test

import (
	"context"
	"fmt"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// ExampleNew starts the fake, imports a disk image into a new VM through
// go-proxmox, and reads the task that did it.
func ExampleNew() {
	srv, err := pvefake.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	_, _ = srv.AddVolume(pvefake.VolumeSpec{Storage: "local", Content: "import", Name: "import/talos.raw", Size: 1 << 30, Format: "raw"})
	c := proxmox.NewClient(srv.URL, proxmox.WithHTTPClient(srv.HTTPClient()), proxmox.WithAPIToken(srv.RootTokenID, srv.RootSecret))
	ctx := context.Background()
	task, err := c.NodeRef("pve").NewVirtualMachine(ctx, 9000,
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:0,import-from=local:import/talos.raw"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.Type, task.ID, task.Wait(ctx, time.Millisecond, time.Second), task.ExitStatus)
	conf, _, _ := srv.VMConfig(9000)
	fmt.Println(conf["scsi0"])
	// Output:
	// qmcreate 9000 <nil> OK
	// local-lvm:vm-9000-disk-0,size=1G
}
