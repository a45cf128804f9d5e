package liveacl_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// Two tenants, each with its own capmox token, sharing one template whose
// NIC sits on the untagged bridge vmbr0; no platform-wide capmox token.
const capmoxTenants = `tenants:
  - name: alpha
    storage: alpha-disks
    tokens: {capmox: capmox}
    templates: [9000]
    networks:
      - bridge: vmbr0
        untagged: true
      - bridge: vmbr1
        vlans: [100]
  - name: beta
    pool: tenant-beta
    user: k8s-beta@pve
    storage: beta-disks
    tokens: {csi: csi-beta, ccm: ccm-beta, capmox: capmox-beta}
    templates: [9000]
    networks:
      - bridge: vmbr0
        untagged: true
      - bridge: vmbr1
        vlans: [200]
`

func clone(c *proxmox.Client, from int, params map[string]any) error {
	return c.Post(ctx, "/nodes/pve/qemu/"+itoa(from)+"/clone", params, nil)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestTenantCapmoxTokenIsolation applies per-tenant capmox tokens to the
// Proxmox API fake and proves, through the API, that alpha's token clones
// its template into its own pool and nowhere else, sees none of beta's
// VMs, and attaches NICs only to its own VLANs; then the audit is clean,
// and reports a removed SDN.Use.
func TestTenantCapmoxTokenIsolation(t *testing.T) {
	srv := cluster(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "tmpl", Type: "lvmthin", Content: []string{"images"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Template: true, Tags: []string{"talos"},
		Disks: map[string]string{"scsi0": "tmpl:4"}, Config: map[string]string{"net0": "virtio,bridge=vmbr0"}}))
	spec := mustTenants(t, capmoxTenants)
	sink := dirSink(t)
	res, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(sink), liveacl.WithSecretContext("https://pve:8006/api2/json", "eu-1"))
	must(t, err)
	if len(res.Secrets) != 6 {
		t.Fatalf("six tokens (CSI, CCM and capmox per tenant), got %v", res.Secrets)
	}
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 200, Pool: "tenant-beta", Disks: map[string]string{"scsi0": "beta-disks:4"}}))
	b, err := os.ReadFile(filepath.Join(sink.Dir, liveacl.SecretName("alpha@pve!capmox")+".json"))
	must(t, err)
	var stored map[string]string
	must(t, json.Unmarshal(b, &stored))
	if stored["url"] != "https://pve:8006" || stored["token"] != "alpha@pve!capmox" || stored["secret"] == "" || stored["insecure"] != "false" {
		t.Fatalf("the capmox token's secret holds the credentialsRef keys (url without /api2/json, token, secret, insecure): %v", keysOf(stored))
	}
	capA := srv.TokenClient("alpha@pve!capmox", stored["secret"])
	full := func(newid int, pool, storage string) map[string]any {
		return map[string]any{"newid": newid, "pool": pool, "full": 1, "storage": storage}
	}
	checkAPI(t, []apiCheck{
		{"alpha's capmox token clones the template into alpha's pool and storage", clone(capA, 9000, full(101, "alpha", "alpha-disks")), ""},
		{"not into beta's pool", clone(capA, 9000, full(102, "tenant-beta", "alpha-disks")), "403 Permission check failed"},
		{"not onto beta's storage", clone(capA, 9000, full(103, "alpha", "beta-disks")), "403 Permission check failed (/storage/beta-disks, Datastore.AllocateSpace)"},
		{"not beta's guest", clone(capA, 200, full(104, "alpha", "alpha-disks")), "403 Permission check failed (/vms/200, VM.Clone)"},
		{"it attaches its clone to its VLAN", capA.Put(ctx, "/nodes/pve/qemu/101/config", map[string]any{"net0": "virtio,bridge=vmbr1,tag=100"}, nil), ""},
		{"not to beta's VLAN", capA.Put(ctx, "/nodes/pve/qemu/101/config", map[string]any{"net0": "virtio,bridge=vmbr1,tag=200"}, nil), "403 Permission check failed (/sdn/zones/localnetwork/vmbr1/200, SDN.Use)"},
		{"it cannot change the template", capA.Put(ctx, "/nodes/pve/qemu/9000/config", map[string]any{"memory": "8192"}, nil), "403 Permission check failed (/vms/9000"},
	})
	var seen proxmox.ClusterResources
	must(t, capA.Get(ctx, "/cluster/resources?type=vm", &seen))
	var ids []int
	for _, r := range seen {
		ids = append(ids, int(r.VMID))
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]int{101, 9000}, ids); diff != "" {
		t.Errorf("alpha's capmox token sees its clone and the template, none of beta's guests (-want +got):\n%s", diff)
	}

	rep := auditLive(t, srv, spec)
	if len(rep.Findings) != 0 {
		t.Fatalf("after apply the audit is clean: %+v", rep.Findings)
	}
	must(t, srv.Client().Put(ctx, "/access/acl", map[string]any{"path": "/sdn/zones/localnetwork/vmbr1/100", "tokens": "alpha@pve!capmox", "roles": "PVESDNUser", "delete": 1}, nil))
	rep = auditLive(t, srv, spec)
	if diff := cmp.Diff([]audit.Code{audit.CodeMissingSDNUse}, rep.Codes()); diff != "" || rep.Findings[0].Path != "/sdn/zones/localnetwork/vmbr1/100" {
		t.Errorf("a removed SDN.Use is a finding on its path (-want +got):\n%s\n%+v", diff, rep.Findings)
	}
}

// apiCheck is one API call's outcome: no error when want is "", else an
// error containing want.
type apiCheck struct {
	reason string
	err    error
	want   string
}

func checkAPI(t *testing.T, checks []apiCheck) {
	t.Helper()
	for _, c := range checks {
		got := ""
		if c.err != nil {
			got = c.err.Error()
		}
		if (c.want == "") != (c.err == nil) || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.reason, got, c.want)
		}
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestTenantLinkedClones: a linked clone (capmox's default full: false)
// shares the template's base disk, and PVE checks Datastore.AllocateSpace
// on the storage that disk is on, outside the tenant's own storage. alpha
// lists that storage under linkedCloneStorages; beta does not. On the
// fake, alpha's capmox token linked-clones the template into its pool and
// not into beta's, beta's token gets PVE's 403 on the template's storage,
// and after apply the audit is clean: the grant is what the tenant asked
// for. The same privilege granted by hand to beta is a CrossTenantReach.
func TestTenantLinkedClones(t *testing.T) {
	srv := cluster(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "tmpl", Type: "lvmthin", Content: []string{"images"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Template: true, Tags: []string{"talos"},
		Disks: map[string]string{"scsi0": "tmpl:4"}, Config: map[string]string{"net0": "virtio,bridge=vmbr0"}}))
	spec := mustTenants(t, strings.Replace(capmoxTenants, "    templates: [9000]\n", "    templates: [9000]\n    linkedCloneStorages: [tmpl]\n", 1))
	sink := dirSink(t)
	_, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(sink), liveacl.WithSecretContext("https://pve:8006/api2/json", "eu-1"))
	must(t, err)
	capA := srv.TokenClient("alpha@pve!capmox", storedSecret(t, sink, "alpha@pve!capmox"))
	capB := srv.TokenClient("k8s-beta@pve!capmox-beta", storedSecret(t, sink, "k8s-beta@pve!capmox-beta"))
	linked := func(newid int, pool string) map[string]any { return map[string]any{"newid": newid, "pool": pool} }
	checkAPI(t, []apiCheck{
		{"alpha's capmox token linked-clones the template into alpha's pool", clone(capA, 9000, linked(101, "alpha")), ""},
		{"not into beta's pool", clone(capA, 9000, linked(102, "tenant-beta")), "403 Permission check failed"},
		{"beta's token, without the grant, gets PVE's refusal on the template's storage", clone(capB, 9000, linked(201, "tenant-beta")), "403 Permission check failed (/storage/tmpl, Datastore.AllocateSpace)"},
		{"beta's token still makes full clones onto its own storage", clone(capB, 9000, map[string]any{"newid": 202, "pool": "tenant-beta", "full": 1, "storage": "beta-disks"}), ""},
	})
	// capmox's path after the clone: grow the boot volume
	// (disks.bootVolume), size the VM, start it.
	vmA := capA.NodeRef("pve").VirtualMachineRef(101)
	checkAPI(t, []apiCheck{
		{"alpha's token grows its linked clone's disk on the template's storage", taskDone(vmA.ResizeDisk(ctx, "scsi0", "10G")), ""},
		{"it sizes the clone", capA.Put(ctx, "/nodes/pve/qemu/101/config", map[string]any{"cores": 4, "memory": "16384"}, nil), ""},
		{"it starts the clone", taskDone(vmA.Start(ctx)), ""},
		{"beta's token grows its full clone on its own storage", taskDone(capB.NodeRef("pve").VirtualMachineRef(202).ResizeDisk(ctx, "scsi0", "10G")), ""},
	})
	if conf, _, _ := srv.VMConfig(101); !strings.HasSuffix(conf["scsi0"], ",size=10G") {
		t.Errorf("the linked clone's disk is grown: scsi0 = %q", conf["scsi0"])
	}
	for _, v := range srv.Volumes() {
		if strings.Contains(v.VolID, "vm-101-") && !strings.HasPrefix(v.VolID, "tmpl:") {
			t.Errorf("the linked clone's disk lives on the template's storage, got %s", v.VolID)
		}
	}
	rep := auditLive(t, srv, spec)
	if len(rep.Findings) != 0 {
		t.Fatalf("the declared linked-clone grant is no finding: %+v", rep.Findings)
	}
	must(t, srv.Client().Put(ctx, "/access/acl", map[string]any{"path": "/storage/tmpl", "tokens": "k8s-beta@pve!capmox-beta", "roles": "CozyLinkedClone"}, nil))
	must(t, srv.Client().Put(ctx, "/access/acl", map[string]any{"path": "/storage/tmpl", "users": "k8s-beta@pve", "roles": "CozyLinkedClone"}, nil))
	rep = auditLive(t, srv, spec)
	if diff := cmp.Diff([]audit.Code{audit.CodeCrossTenantReach}, rep.Codes()); diff != "" {
		t.Errorf("the same grant to beta, which did not ask for it, reaches outside beta (-want +got):\n%s\n%+v", diff, rep.Findings)
	}
}

// taskDone waits for a task and returns its failure.
func taskDone(task *proxmox.Task, err error) error {
	if err != nil {
		return err
	}
	return task.Wait(ctx, time.Millisecond, 5*time.Second)
}
