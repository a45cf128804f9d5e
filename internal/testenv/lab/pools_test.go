package lab_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
)

// The shared storage and the template on it of TestCapmoxPoolShapes.
const (
	sharedStorage  = "ceph-vm"
	sharedTemplate = 9300
	sharedTags     = "cozystack,schematic-ce4c9805,shared,talos,talos-v1.13.6"
	// backendPool is the IPAM pool (and ProxmoxNetwork) of the VPC subnet
	// net1 attaches to: testdata/shapes-network.yaml.
	backendPool = "subnet-f4d01a94"
)

// addSharedTemplate makes the shared storage and the template on it; with
// sharedISO the tenant's ISO storage is a shared folder too (a CephFS or
// NFS mount), made before the lab would make it node-local. A VM then
// finds its disks and its bootstrap ISO on every node, as HA recovery
// needs.
func addSharedTemplate(t *testing.T, l *lab.Lab, sharedISO bool) {
	t.Helper()
	must(t, l.PVE.AddStorage(pvefake.StorageSpec{ID: sharedStorage, Type: "rbd", Content: []string{"images"}, Shared: true}))
	if sharedISO {
		root, err := l.Root()
		must(t, err)
		must(t, root.Post(context.Background(), "/storage", map[string]any{"storage": "tenant-demo-iso", "type": "dir",
			"path": "/mnt/pve/tenant-demo-iso", "content": "iso", "shared": 1}, nil))
	}
	createTemplate(t, l, sharedTemplate, sharedStorage, pvelab.Nodes[0], sharedTags)
}

// useSharedTemplate has the tenant's pool clone the shared template, linked
// (its disks on the shared storage), with the platform admin's grants of
// both.
func useSharedTemplate(tn *lab.Tenant) {
	tn.Pools[0].Spec.Proxmox.TemplateTags = strings.Split(sharedTags, ",")
	tn.Plan = func(p *tenantplan.Tenant) {
		p.Templates = append(p.Templates, sharedTemplate)
		p.LinkedCloneStorages = append(p.LinkedCloneStorages, sharedStorage)
	}
}

// TestCapmoxPoolShapes: a pool of testdata/shapes-nodes.yaml, rendered by
// us with an instanceType, a diskSize, a second NIC on a VPC subnet and
// allowedNodes [pve2, pve3], comes up on those nodes only, each VM sized,
// attached and placed as the pool asks, and its Machines run.
//
// capmox clones on the template's node (FindVMTemplateByTags returns it)
// and, with allowedNodes, passes the node its scheduler picks as the
// clone's target. qemu-server's clone_vm (PVE/API2/Qemu.pm) refuses a
// target other than the template's own node unless every disk of the
// template is on shared storage: "can't clone VM to node '<n>' (VM uses
// local storage)". A template per node is no way out with a tag selector:
// capmox wants exactly one template for the tags cluster-wide, so a copy
// per node with the same tags is ambiguous. What an operator does, then,
// is keep the template pools with allowedNodes clone from on shared
// storage: here an RBD storage, where a linked clone also works (the
// template's base volume backs the clones on every node). The lab's own
// template is on pve1's local-lvm; the second pool of the file places a
// worker from it on pve2 and gets PVE's refusal, which capmox reports.
// Both capmox generations: the v0.7.2 render (API v1alpha1) takes every
// field the v0.9.0 one does.
func TestCapmoxPoolShapes(t *testing.T) { eachCapmox(t, poolShapes) }

func poolShapes(t *testing.T, gen capi.Capmox) {
	ctx := context.Background()
	// A lab of its own: its shared template's tags (sharedTags) hold the
	// lab template's, so any other tenant's selection would find two, and
	// it adds a bridge to every node and a storage to the fake.
	l := startLab(t, gen)
	addSharedTemplate(t, l, false)
	for _, n := range pvelab.Nodes {
		must(t, l.PVE.SetInterface(n, pvefake.Interface{Name: "vmbr2", Type: "bridge", Ports: "eno3", VLANAware: true, VIDs: "2-4094"}))
	}
	tn, err := lab.ReadTenant(filepath.Join("testdata", "kubernetes.yaml"), filepath.Join("testdata", "shapes-nodes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	network := readObjects(t, filepath.Join("testdata", "shapes-network.yaml"))
	tn.Lookup = network[:1]
	// The platform's admin grants the tenant the shared template, its
	// storage (linked clones) and the backend subnet's VLAN.
	tn.Plan = func(p *tenantplan.Tenant) {
		p.Templates = append(p.Templates, sharedTemplate)
		p.LinkedCloneStorages = append(p.LinkedCloneStorages, sharedStorage)
		p.Networks = append(p.Networks, tenantplan.Network{Bridge: "vmbr2", VLANs: []int{200}})
	}
	a, err := l.ApplyACLs(ctx, &tn)
	if err != nil {
		t.Fatal(err)
	}
	must(t, l.Client.Create(ctx, network[1]))
	must(t, l.ApplyObjects(ctx, tn, a))

	refusal := "can't clone VM to node 'pve2' (VM uses local storage)"
	eventually(t, 4*time.Minute, "the shapes pool runs and the local pool's clone is refused", func() (bool, string) {
		running, state := machinesOf(t, l, "shapes")
		return running == 2 && strings.Contains(l.Managers.Capmox.ReadOutput(), refusal),
			state + "\n" + l.Managers.Capmox.Tail(20)
	})
	checkShapes(t, l, a)

	// The local pool: PVE's refusal as capmox reports it, its clone POSTs
	// to the template's node answered 500, and no VM.
	log := l.Managers.Capmox.ReadOutput()
	if !strings.Contains(log, "unable to create new vm: 500 "+refusal) {
		t.Errorf("capmox's log lacks go-proxmox's error %q", "unable to create new vm: 500 "+refusal)
	}
	refused := 0
	for _, r := range l.PVE.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, fmt.Sprintf("/nodes/%s/qemu/%d/clone", l.Template.Node, l.Template.VMID)) {
			if r.Status != 500 {
				t.Errorf("clone of the local template answered %d, want 500", r.Status)
			}
			refused++
		}
	}
	if refused == 0 {
		t.Errorf("no clone of the local template %d was asked for", l.Template.VMID)
	}
	if pm, ok := proxmoxMachines(t, l, "tenant-demo")["local"]; !ok || pm.vmid != 0 {
		t.Errorf("the local pool's ProxmoxMachine: %+v, want one without a VM", pm)
	}
	if d, u, b := l.PVE.Denied(), l.PVE.Unserved(), l.PVE.BootErrors(); len(d)+len(u)+len(b) > 0 {
		t.Errorf("denied %v, unserved %v, boot errors %v", d, u, b)
	}
}

// checkShapes asserts each VM of the shapes pool on the fake against
// testdata/shapes-nodes.yaml.
func checkShapes(t *testing.T, l *lab.Lab, a *lab.Applied) {
	t.Helper()
	ctx := context.Background()
	pool, err := l.PVE.Client().Pool(ctx, "tenant-demo")
	if err != nil {
		t.Fatal(err)
	}
	members := map[uint64]bool{}
	for _, m := range pool.Members {
		members[m.VMID] = true
	}
	cloneOf := clonesByVM(l)
	nodes := map[string]int{}
	shapes := 0
	for _, pm := range proxmoxMachinesList(t, l) {
		if pm.group != "shapes" {
			continue
		}
		shapes++
		conf, node, ok := l.PVE.VMConfig(pm.vmid)
		if !ok {
			t.Errorf("%s: VM %d is not on the fake", pm.name, pm.vmid)
			continue
		}
		nodes[node]++
		tags := strings.Split(conf["tags"], ";")
		want := map[string]bool{
			"cores 2 (u1.large)":            conf["cores"] == "2",
			"sockets 1":                     conf["sockets"] == "1",
			"memory 8192 (u1.large)":        conf["memory"] == "8192",
			"disk 40G":                      strings.Contains(conf["scsi0"], "size=40G"),
			"disk on the shared storage":    strings.HasPrefix(conf["scsi0"], sharedStorage+":"),
			"net0 on vmbr1 tag 100":         strings.Contains(conf["net0"], "bridge=vmbr1") && strings.Contains(conf["net0"], "tag=100"),
			"net1 on vmbr2 tag 200":         strings.Contains(conf["net1"], "bridge=vmbr2") && strings.Contains(conf["net1"], "tag=200"),
			"on pve2 or pve3":               node == "pve2" || node == "pve3",
			"capmox's node is the VM's":     pm.node == node,
			"in the pool":                   members[uint64(pm.vmid)],
			"the shared template's tags":    containsAll(tags, strings.Split(sharedTags, ",")),
			"cloned from the template 9300": cloneOf[pm.vmid] == sharedTemplate,
		}
		for what, holds := range want {
			if !holds {
				t.Errorf("%s (VM %d on %s): not %s: %v", pm.name, pm.vmid, node, what, conf)
			}
		}
	}
	// capmox's scheduler spreads the pool's workers over its nodes.
	if shapes != 2 || nodes["pve2"] != 1 || nodes["pve3"] != 1 {
		t.Errorf("%d shapes workers, by node %v: want one on pve2 and one on pve3", shapes, nodes)
	}
	// Each worker holds an address of the backend subnet's pool for net1.
	addrs := &unstructured.UnstructuredList{}
	addrs.SetAPIVersion("ipam.cluster.x-k8s.io/v1beta2")
	addrs.SetKind("IPAddressList")
	must(t, l.Client.List(ctx, addrs, client.InNamespace("tenant-demo")))
	backend := 0
	for _, ad := range addrs.Items {
		name, _, _ := unstructured.NestedString(ad.Object, "spec", "poolRef", "name")
		addr, _, _ := unstructured.NestedString(ad.Object, "spec", "address")
		if name == backendPool {
			backend++
			if !addressIn(addr, "10.0.200.20", "10.0.200.29") {
				t.Errorf("address %s of pool %s is outside 10.0.200.20-29", addr, backendPool)
			}
		}
	}
	if backend != 2 {
		t.Errorf("%d addresses of %s, want one per shapes worker", backend, backendPool)
	}
	for _, task := range l.PVE.Tasks() {
		if task.Type == "qmclone" && task.User != a.TokenID {
			t.Errorf("clone %s was made by %s, not the tenant's token %s", task.UPID, task.User, a.TokenID)
		}
	}
}

// machinesOf counts the Running Machines with a nodeRef of a pool (its
// MachineDeployment kubernetes-demo-<group>) and describes them.
func machinesOf(t *testing.T, l *lab.Lab, group string) (int, string) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineList")
	must(t, l.Client.List(context.Background(), list, client.InNamespace("tenant-demo"),
		client.MatchingLabels{"cluster.x-k8s.io/deployment-name": "kubernetes-demo-" + group}))
	running := 0
	var out []string
	for _, m := range list.Items {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		if phase == "Running" && node != "" {
			running++
		}
		out = append(out, fmt.Sprintf("%s phase=%s node=%s", m.GetName(), phase, node))
	}
	return running, strings.Join(out, "\n")
}

// proxmoxMachinesList lists the lab's ProxmoxMachines with their group.
func proxmoxMachinesList(t *testing.T, l *lab.Lab) []proxmoxMachine {
	t.Helper()
	var out []proxmoxMachine
	for group, pm := range proxmoxMachinesAll(t, l, "tenant-demo") {
		for _, m := range pm {
			m.group = group
			out = append(out, m)
		}
	}
	return out
}

// clonesByVM maps each clone the fake made to its source, from the
// qmclone tasks' logs ("creating a clone of VM <source> with ID <new>").
func clonesByVM(l *lab.Lab) map[int]int {
	out := map[int]int{}
	for vmid, c := range clones(l) {
		out[vmid] = c.from
	}
	return out
}

// clone is how the fake made a VM: the template or VM it cloned and the
// qmclone task that did it.
type clone struct {
	from int
	task pvefake.TaskInfo
}

// clones maps each VM the fake cloned to its latest qmclone task (a VM id
// freed may be taken again), read from the tasks' logs ("creating a clone
// of VM <source> with ID <new>").
func clones(l *lab.Lab) map[int]clone {
	out := map[int]clone{}
	for _, task := range l.PVE.Tasks() {
		if src, to, ok := clonedBy(task); ok {
			out[to] = clone{from: src, task: task}
		}
	}
	return out
}

// clonedBy reads a task's log: for a qmclone task, the VM it cloned and
// the id of the clone it made.
func clonedBy(task pvefake.TaskInfo) (from, to int, ok bool) {
	if task.Type != "qmclone" {
		return 0, 0, false
	}
	src, _ := strconv.Atoi(task.ID)
	for _, line := range task.Log {
		if _, err := fmt.Sscanf(line, "creating a clone of VM %d with ID %d", &from, &to); err == nil && from == src {
			return from, to, true
		}
	}
	return 0, 0, false
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// readObjects reads the documents of a YAML file as objects.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := strictyaml.Documents(data)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(d.JSON); err != nil {
			t.Fatalf("%s: document %d: %v", path, d.Index, err)
		}
		out = append(out, u)
	}
	return out
}
