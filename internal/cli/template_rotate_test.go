package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// rotationPool is a pool on the template tags of talos (version v).
func rotationPool(v string) string {
	return `apiVersion: apps.cozystack.io/v1alpha1
kind: KubernetesNodes
metadata: {name: demo-workers, namespace: tenant-demo}
spec:
  cluster: demo
  substrate: proxmox
  version: v1.35.2
  replicas: 2
  resources: {cpu: 2, memory: 4Gi}
  talos: {version: ` + v + `, schematicID: ` + guestAgentID + `}
  proxmox:
    templateTags: [cozystack, schematic-ce4c9805, talos, talos-` + v + `]
    network: {bridge: vmbr1}
    pool: tenant-demo
    dnsServers: [10.0.100.1]
`
}

// machineTemplateName renders the pool and returns its one
// ProxmoxMachineTemplate's name.
func machineTemplateName(t *testing.T, pool string) string {
	t.Helper()
	return machineTemplateNames(t, pool)[0]
}

// destroy deletes a VM through the API (what qm destroy does) and waits.
func destroy(c *proxmox.Client, vmid string) error {
	var upid proxmox.UPID
	if err := c.Delete(context.Background(), "/nodes/pve/qemu/"+vmid, &upid); err != nil {
		return err
	}
	return proxmox.NewTask(upid, c).Wait(context.Background(), 5*time.Millisecond, 10*time.Second)
}

// TestTemplateRotation runs the rotation of docs/talostemplate.md on the
// API fake: a new template with a new VMID and tags beside the old one, the
// pool rendered on the new tags (a new machine template name, so the pool
// rolls), and the old template refused removal while a linked clone stands
// on its base disk, removed once the clone is gone.
func TestTemplateRotation(t *testing.T) {
	e := newTplEnv(t)
	if err := e.srv.AddStorage(pvefake.StorageSpec{ID: "tank", Type: "zfspool", Content: []string{"images"}}); err != nil {
		t.Fatal(err)
	}
	create := func(vmid, version string) {
		args := e.createArgs(vmid)
		args[3] = "tank"
		args[argIndex(args, "--talos-version")+1] = version
		if _, errOut, code := run(t, args...); code != 0 {
			t.Fatalf("template create %s %s: exit %d\n%s", vmid, version, code, errOut)
		}
	}
	create("9000", "v1.13.6")
	root := e.srv.Client()
	var upid proxmox.UPID
	if err := root.Post(context.Background(), "/nodes/pve/qemu/9000/clone", map[string]any{"newid": 101}, &upid); err != nil {
		t.Fatal(err)
	}
	if err := proxmox.NewTask(upid, root).Wait(context.Background(), 5*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("a linked clone of the old template (a worker): %v", err)
	}
	if conf, _, _ := e.srv.VMConfig(101); !strings.HasPrefix(conf["scsi0"], "tank:base-9000-disk-") {
		t.Fatalf("the worker is a linked clone of 9000: scsi0 %q", conf["scsi0"])
	}
	create("9001", "v1.13.7")
	if conf, _, _ := e.srv.VMConfig(9001); conf["tags"] != "cozystack;schematic-ce4c9805;talos;talos-v1.13.7" {
		t.Fatalf("the new template carries the new tags: %q", conf["tags"])
	}
	old, next := machineTemplateName(t, rotationPool("v1.13.6")), machineTemplateName(t, rotationPool("v1.13.7"))
	if old == next {
		t.Fatalf("the pool on the new tags must render a new machine template, got %s twice", old)
	}
	mixed := strings.Replace(rotationPool("v1.13.7"), "talos-v1.13.7", "talos-v1.13.6", 1)
	if _, errOut, code := runIn(t, mixed, "render", "nodes", "-f", "-"); code != 1 || !strings.Contains(errOut, `proxmox.templateTags[3] is "talos-v1.13.6", but the workers install Talos v1.13.7`) {
		t.Errorf("the new installer on the old template's tags is refused: exit %d: %s", code, errOut)
	}
	err := destroy(root, "9000")
	if err == nil || !strings.Contains(err.Error(), "is still in use by linked clones") {
		t.Fatalf("the old template must not go while a linked clone uses it, got %v", err)
	}
	if _, _, ok := e.srv.VMConfig(9000); !ok {
		t.Fatal("the refused destroy left the template in place")
	}
	if err := destroy(root, "101"); err != nil {
		t.Fatalf("the rolled-out worker goes: %v", err)
	}
	if err := destroy(root, "9000"); err != nil {
		t.Fatalf("with no linked clone left the old template goes: %v", err)
	}
}
