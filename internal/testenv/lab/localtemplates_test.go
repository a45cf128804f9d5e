package lab_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// The templates of TestLocalTemplates: one per node on the node's
// local-lvm, from these VMIDs on (pve1, pve2, pve3 in turn), for the lab's
// Talos release and for the rotation's.
const (
	localTemplates        = 9100
	rotatedLocalTemplates = 9110
)

// localVMIDs is the tenant plan's vmIDRange in TestLocalTemplates: a
// rotation of six workers deletes and clones on the same nodes at once,
// and without a range capmox (v0.7.2 and v0.9.0 alike) clones at the
// lowest free VM id (GET /cluster/nextid), which may be the id a
// ProxmoxMachine being deleted still records: its next delete then
// destroys the new VM (capmox issue 856). Inside a range, capmox skips
// the id of every ProxmoxMachine of the cluster.
var localVMIDs = tenantplan.VMIDRange{Start: 1000, End: 1099}

// TestLocalTemplates: a cluster with local storage only, where each node
// holds its own template, end to end with the real providers. The
// templates are made as `pxsubstrate template create 9100 local-lvm
// --per-node` makes them (talostemplate.PerNode and Create: each on its
// node's local-lvm, an LVM-thin storage of every node that is not shared,
// tagged node-<node> beside the shared tags), and the pool of six workers
// sets proxmox.localTemplates on the three nodes, which the render makes
// one MachineDeployment per node, pinned to it and selecting its node's
// template.
//
//   - the pool comes up two workers per node, each a linked clone (no
//     full copy) of its own node's template, made on that node, each VM's
//     id in the tenant's vmIDRange (localVMIDs); capmox's
//     log and the fake's tasks hold no "can't clone VM to node" refusal;
//     the tenant's token was granted the six templates and local-lvm, and
//     acl audit finds no error;
//   - the rotation (the next Talos release's three templates, built the
//     same way, and the pool's talos.version and templateTags switched to
//     them) rolls every node's workers onto its node's new template; the
//     old templates are then unused (no VM is a clone of one, and no
//     machine template of a MachineSet that still has machines selects
//     one) and go, as the rotation's last step removes them;
//   - deleting the cluster leaves no worker VM, and so no template the pool
//     made in use: each is unused and removed, and no template of the
//     pool's is left on the cluster.
func TestLocalTemplates(t *testing.T) { eachCapmox(t, localTemplatesRun) }

func localTemplatesRun(t *testing.T, gen capi.Capmox) {
	start := time.Now()
	ctx := context.Background()
	l := startLab(t, gen)
	first := createLocalTemplates(t, l, localTemplates, labTalosVersion)
	rotated := createLocalTemplates(t, l, rotatedLocalTemplates, rotatedTalos)
	tn := localTemplatesTenant(t, first, rotated)
	a, err := l.Apply(ctx, tn)
	must(t, err)
	step := func(what string, want []talostemplate.Spec) {
		t.Helper()
		eventually(t, 5*time.Minute, what, func() (bool, string) { return localPoolIs(t, l, want) })
		t.Logf("%s: six workers, two per node, each a linked clone of its node's template (%s after %s)", what, templateList(want), time.Since(start).Round(time.Second))
	}
	step("the pool is up", first)
	checkNoCrossNodeClone(t, l)
	checkAuditClean(t, l, a)

	pool := &tn.Pools[0].Spec
	pool.Talos.Version = rotatedTalos
	pool.Proxmox.TemplateTags = rotated[0].SharedTags()
	must(t, l.UpdatePools(ctx, tn, a))
	step("rotated", rotated)
	for _, s := range first {
		eventually(t, 2*time.Minute, fmt.Sprintf("template %d is unused", s.VMID), func() (bool, string) { return templateUnused(t, l, s) })
		destroyTemplate(t, l, s)
	}
	checkNoCrossNodeClone(t, l)

	cluster := deleteCluster(t, l, "tenant-demo", a.ClusterName)
	eventually(t, 3*time.Minute, "the Cluster goes", clusterGone(t, l, cluster))
	eventually(t, 2*time.Minute, "no worker VM is left", func() (bool, string) {
		g := guests(l)
		return len(g) == 0, fmt.Sprintf("%d guests left", len(g))
	})
	for _, s := range rotated {
		if ok, why := templateUnused(t, l, s); !ok {
			t.Fatalf("after the cluster's deletion: %s", why)
		}
		destroyTemplate(t, l, s)
	}
	if left := poolTemplates(l, append(slices.Clone(first), rotated...)); len(left) > 0 {
		t.Errorf("templates of the pool left after the cluster's deletion: %v", left)
	}
	if d, u, b := l.PVE.Denied(), l.PVE.Unserved(), l.PVE.BootErrors(); len(d)+len(u)+len(b) > 0 {
		t.Errorf("denied %v, unserved %v, boot errors %v", d, u, b)
	}
	t.Logf("TestLocalTemplates/%s took %s", gen, time.Since(start).Round(time.Second))
}

// createLocalTemplates makes the template of each lab node for Talos
// version, as `pxsubstrate template create <vmid> local-lvm --per-node
// --talos-version <version>` makes them, and checks each is on its node.
func createLocalTemplates(t *testing.T, l *lab.Lab, vmid int, version string) []talostemplate.Spec {
	t.Helper()
	spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: fmt.Sprint(vmid), Storage: pvelab.TemplateStorage, TalosVersion: version, SchematicID: labSchematic})
	must(t, err)
	nodes, err := talostemplate.ClusterNodes(context.Background(), l.PVE.Client())
	must(t, err)
	specs, err := talostemplate.PerNode(spec, nodes)
	must(t, err)
	for i, s := range specs {
		res, err := talostemplate.Create(context.Background(), l.PVE.Client(), s, talostemplate.CreateOptions{PollInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatalf("cannot create the template of %s: %v", s.Node, err)
		}
		if res.Node != pvelab.Nodes[i] || !strings.HasPrefix(res.Config["scsi0"], pvelab.TemplateStorage+":") {
			t.Fatalf("template %d: on %s with scsi0 %q, want on %s, on %s", s.VMID, res.Node, res.Config["scsi0"], pvelab.Nodes[i], pvelab.TemplateStorage)
		}
	}
	return specs
}

// localTemplatesTenant is testdata's tenant with a pool of six workers on
// the three nodes' templates, the cluster's address pool wide enough for
// every node's rolling update at once, and the platform's admin granting
// the tenant the six templates (local-lvm, their storage, is the lab's
// linked-clone storage already) and the VM ids localVMIDs.
func localTemplatesTenant(t *testing.T, first, rotated []talostemplate.Spec) lab.Tenant {
	t.Helper()
	tn := readTenant(t)
	tn.Cluster.Spec.Proxmox.IPv4Config.Addresses = []string{"10.0.100.20-10.0.100.49"}
	p := &tn.Pools[0].Spec
	six := int32(6)
	p.Replicas = &six
	p.Proxmox.LocalTemplates = true
	p.Proxmox.AllowedNodes = slices.Clone(pvelab.Nodes)
	p.Proxmox.TemplateTags = first[0].SharedTags()
	tn.Plan = func(pt *tenantplan.Tenant) {
		pt.VMIDRange = &localVMIDs
		for _, s := range append(slices.Clone(first), rotated...) {
			pt.Templates = append(pt.Templates, s.VMID)
		}
		if !slices.Contains(pt.LinkedCloneStorages, pvelab.TemplateStorage) {
			t.Fatalf("the lab's linked-clone storages %v lack %s", pt.LinkedCloneStorages, pvelab.TemplateStorage)
		}
	}
	return tn
}

// localPoolIs says whether the pool is exactly six running workers and
// nothing else (poolIsShaped), two on each node, each cloned on its node
// from its node's template of want, as a linked clone, each with its VM id
// in localVMIDs.
func localPoolIs(t *testing.T, l *lab.Lab, want []talostemplate.Spec) (bool, string) {
	t.Helper()
	ok, state := poolIsShaped(t, l, 6, vmShape{diskGiB: 30})
	if !ok {
		return false, state
	}
	of := map[string]int{}
	for _, s := range want {
		of[s.Node] = s.VMID
	}
	made := clones(l)
	perNode := map[string]int{}
	var problems []string
	for _, g := range guests(l) {
		perNode[g.node]++
		switch {
		case !localVMIDs.Contains(g.vmid):
			problems = append(problems, fmt.Sprintf("VM %d on %s is outside the tenant's vmIDRange %s", g.vmid, g.node, localVMIDs))
		case made[g.vmid].from != of[g.node]:
			problems = append(problems, fmt.Sprintf("VM %d on %s is a clone of %d, want %d", g.vmid, g.node, made[g.vmid].from, of[g.node]))
		case !slices.ContainsFunc(made[g.vmid].task.Log, func(line string) bool { return strings.HasPrefix(line, "create linked clone of drive scsi0 (") }) ||
			slices.ContainsFunc(made[g.vmid].task.Log, func(line string) bool { return strings.HasPrefix(line, "create full clone") }):
			problems = append(problems, fmt.Sprintf("VM %d is not a linked clone: %q", g.vmid, made[g.vmid].task.Log))
		}
	}
	for _, n := range pvelab.Nodes {
		if perNode[n] != 2 {
			problems = append(problems, fmt.Sprintf("%d workers on %s, want 2 (%v)", perNode[n], n, perNode))
		}
	}
	return len(problems) == 0, strings.Join(problems, "\n")
}

// checkNoCrossNodeClone: qemu-server's refusal of a clone of a template on
// local storage to another node is nowhere, neither in capmox's log nor in
// a task of the fake.
func checkNoCrossNodeClone(t *testing.T, l *lab.Lab) {
	t.Helper()
	const refusal = "can't clone VM to node"
	if log := l.Managers.Capmox.ReadOutput(); strings.Contains(log, refusal) {
		t.Errorf("capmox's log holds %q:\n%s", refusal, capmoxClues(log, 20))
	}
	for _, task := range l.PVE.Tasks() {
		if slices.ContainsFunc(task.Log, func(s string) bool { return strings.Contains(s, refusal) }) || strings.Contains(task.ExitStatus, refusal) {
			t.Errorf("task %s: %s %v", task.UPID, task.ExitStatus, task.Log)
		}
	}
}

// checkAuditClean runs acl audit over the fake's ACLs with the tenant's
// specification: no error-level finding.
func checkAuditClean(t *testing.T, l *lab.Lab, a *lab.Applied) {
	t.Helper()
	cfg, err := liveacl.Read(context.Background(), l.PVE.Client())
	must(t, err)
	rep, err := audit.RunWith(cfg, a.Spec, audit.Options{})
	must(t, err)
	if rep.HasErrors() {
		t.Errorf("acl audit finds errors: %+v", rep.Findings)
	}
}

// templateUnused says whether a template is unused, the condition of the
// rotation's last step (docs/talostemplate.md): no VM on the cluster is a
// clone of it (on LVM-thin a linked clone's volume does not name its base,
// so the clone tasks tell), and no MachineSet with machines left clones
// through a machine template that selects it (its tags are the
// template's), which would clone it again.
func templateUnused(t *testing.T, l *lab.Lab, s talostemplate.Spec) (bool, string) {
	t.Helper()
	cloneOf := clonesByVM(l)
	for _, g := range guests(l) {
		if cloneOf[g.vmid] == s.VMID {
			return false, fmt.Sprintf("VM %d on %s is a clone of template %d", g.vmid, g.node, s.VMID)
		}
	}
	for _, ms := range listObjects(t, l, "MachineSet") {
		replicas, _, _ := unstructured.NestedInt64(ms.Object, "status", "replicas")
		name, _, _ := unstructured.NestedString(ms.Object, "spec", "template", "spec", "infrastructureRef", "name")
		pmt := &unstructured.Unstructured{}
		pmt.SetAPIVersion(l.InfrastructureAPIVersion())
		pmt.SetKind("ProxmoxMachineTemplate")
		if err := l.Client.Get(context.Background(), client.ObjectKey{Namespace: "tenant-demo", Name: name}, pmt); err != nil {
			continue
		}
		tags, _, _ := unstructured.NestedStringSlice(pmt.Object, "spec", "template", "spec", "templateSelector", "matchTags")
		slices.Sort(tags)
		if replicas > 0 && slices.Equal(tags, s.Tags) {
			return false, fmt.Sprintf("MachineSet %s (%d machines) clones template %d through %s", ms.GetName(), replicas, s.VMID, name)
		}
	}
	return true, ""
}

func listObjects(t *testing.T, l *lab.Lab, kind string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind(kind + "List")
	must(t, l.Client.List(context.Background(), list, client.InNamespace("tenant-demo")))
	return list.Items
}

// destroyTemplate removes a template as the rotation's last step does
// (qm destroy, DELETE /nodes/<node>/qemu/<vmid>) and waits until it is gone.
func destroyTemplate(t *testing.T, l *lab.Lab, s talostemplate.Spec) {
	t.Helper()
	var upid string
	must(t, l.PVE.Client().Delete(context.Background(), fmt.Sprintf("/nodes/%s/qemu/%d", s.Node, s.VMID), &upid))
	eventually(t, time.Minute, fmt.Sprintf("template %d is destroyed", s.VMID), func() (bool, string) {
		_, _, ok := l.PVE.VMConfig(s.VMID)
		return !ok, fmt.Sprintf("template %d is still there (task %s)", s.VMID, upid)
	})
}

// poolTemplates are the templates of specs still on the fake.
func poolTemplates(l *lab.Lab, specs []talostemplate.Spec) []int {
	var out []int
	for _, s := range specs {
		if _, _, ok := l.PVE.VMConfig(s.VMID); ok {
			out = append(out, s.VMID)
		}
	}
	return out
}

func templateList(specs []talostemplate.Spec) string {
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = fmt.Sprintf("%d on %s", s.VMID, s.Node)
	}
	return strings.Join(parts, ", ")
}
