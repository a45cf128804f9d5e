package lab_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// TestPoolLifecycle takes the seed's pool through its life with the real
// providers, each step asserted on the Proxmox fake and in Cluster API:
// two workers grow to three and shrink to one (each removed Machine's VM
// stopped and destroyed, its disks and bootstrap ISO freed, its address
// back in the IPAM pool, its VM id free); a larger diskSize rolls the pool
// onto new VMs with the new size and no old VM left; an instanceType in
// place of resources (u1.medium: 1 vCPU, 4 GiB), then a larger one
// (u1.large: 2 vCPUs, 8 GiB), rolls it onto VMs of those sizes; a Talos
// template rotation as docs/talostemplate.md tells it (a second template
// made by talostemplate.Create for Talos v1.13.7, as `pxsubstrate template
// create` makes it, the pool's talos.version and templateTags switched to
// it together, the old template destroyed once no worker stands on it)
// rolls it onto clones of the new template; deleting the cluster leaves
// nothing of the tenant on Proxmox (no VM, disk, ISO or pool member) and
// nothing in the IPAM pool.
func TestPoolLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A lab of its own: it adds a template and destroys the lab's own
	// once its pool has rotated off it, which every other tenant clones.
	l := startLab(t, "")
	// The rotation's template, made before the tenant is applied so that
	// the platform's admin can name it in the tenant's plan, which grants
	// the tenant's token the templates it may clone.
	rotated := createTalosTemplate(t, l, rotatedTemplate, rotatedTalos)
	tn := readTenant(t)
	tn.Plan = func(p *tenantplan.Tenant) { p.Templates = append(p.Templates, rotatedTemplate) }
	a, err := l.Apply(ctx, tn)
	if err != nil {
		t.Fatal(err)
	}
	want := vmShape{diskGiB: 30, cores: 2, memoryMiB: 4096, template: l.Template.VMID}
	step := func(what string, replicas int32) {
		t.Helper()
		eventually(t, 4*time.Minute, what, func() (bool, string) {
			return poolIsShaped(t, l, int(replicas), want)
		})
		t.Logf("%s: %d workers %+v run, nothing else is left", what, replicas, want)
	}
	step("two workers", 2)

	pool := &tn.Pools[0].Spec
	resize := func(replicas int32, disk string) {
		t.Helper()
		pool.Replicas = &replicas
		q := capmoxrender.Quantity(disk)
		pool.DiskSize = &q
		must(t, l.UpdatePools(ctx, tn, a))
	}
	resize(3, "30Gi")
	step("scaled up to three", 3)
	resize(1, "30Gi")
	step("scaled down to one", 1)
	resize(1, "40Gi")
	want.diskGiB = 40
	step("diskSize 30Gi to 40Gi", 1)

	// instanceType sizes the pool in place of resources.
	pool.Resources = capmoxrender.Resources{}
	for _, it := range []struct {
		name          string
		cores, memory int
	}{{"u1.medium", 1, 4096}, {"u1.large", 2, 8192}} {
		pool.InstanceType = it.name
		must(t, l.UpdatePools(ctx, tn, a))
		want.cores, want.memoryMiB = it.cores, it.memory
		step("instanceType "+it.name, 1)
	}

	// The rotation: the new template's tags and Talos release together.
	pool.Talos.Version = rotatedTalos
	pool.Proxmox.TemplateTags = rotated.Tags
	must(t, l.UpdatePools(ctx, tn, a))
	want.template = rotatedTemplate
	step("templateTags switched to template "+strconv.Itoa(rotatedTemplate), 1)
	// No worker stands on the old template any more: it goes.
	var upid string
	must(t, l.PVE.Client().Delete(ctx, fmt.Sprintf("/nodes/%s/qemu/%d", l.Template.Node, l.Template.VMID), &upid))
	eventually(t, time.Minute, "the old template is destroyed", func() (bool, string) {
		_, _, ok := l.PVE.VMConfig(l.Template.VMID)
		return !ok, fmt.Sprintf("template %d is still there (task %s)", l.Template.VMID, upid)
	})
	step("the old template destroyed", 1)

	cluster := deleteCluster(t, l, "tenant-demo", a.ClusterName)
	step("cluster deleted", 0)
	eventually(t, 2*time.Minute, "the Cluster goes", clusterGone(t, l, cluster))
	if d, u, b := l.PVE.Denied(), l.PVE.Unserved(), l.PVE.BootErrors(); len(d)+len(u)+len(b) > 0 {
		t.Errorf("denied %v, unserved %v, boot errors %v", d, u, b)
	}
}

// poolIs says whether the tenant has exactly n Machines, all Running,
// backed by exactly n worker VMs on the fake, each with a disk of diskGiB,
// every one in the tenant's pool, and nothing else of the tenant: no
// volume of a VM that is gone, one bootstrap ISO at most per VM, one IPAM
// address and claim per Machine.
func poolIs(t *testing.T, l *lab.Lab, n, diskGiB int) (bool, string) {
	t.Helper()
	return poolIsShaped(t, l, n, vmShape{diskGiB: diskGiB})
}

// vmShape is what each worker VM must be: its disk, cores, memory and the
// template it was cloned from (0: not checked).
type vmShape struct {
	diskGiB, cores, memoryMiB, template int
}

// poolIsShaped is poolIs with each VM's shape checked: its cores and
// memory in its configuration, and its template from the fake's qmclone
// task logs ("creating a clone of VM <template> with ID <new>", as
// qemu-server logs it; clonesByVM), the last clone of each VM id counting.
func poolIsShaped(t *testing.T, l *lab.Lab, n int, want vmShape) (bool, string) {
	t.Helper()
	removeDuplicateClones(t, l)
	return poolClean(t, l, n, want)
}

// poolClean is poolIsShaped without removing the clones capmox lost: it
// says whether the pool is exactly its n workers and nothing else as it
// stands.
func poolClean(t *testing.T, l *lab.Lab, n int, want vmShape) (bool, string) {
	t.Helper()
	ctx := context.Background()
	running, state := machines(t, l.Client, "tenant-demo")
	var problems []string
	if total := strings.Count(state, "phase="); total != n || running != n {
		problems = append(problems, fmt.Sprintf("%d Machines, %d Running, want %d", total, running, n))
	}
	cloneOf := clonesByVM(l)
	vms := map[int]bool{}
	for _, g := range guests(l) {
		vmid, conf := g.vmid, g.conf
		vms[vmid] = true
		if !strings.Contains(conf["scsi0"], fmt.Sprintf("size=%dG", want.diskGiB)) {
			problems = append(problems, fmt.Sprintf("VM %d has scsi0 %q, want %d GiB", vmid, conf["scsi0"], want.diskGiB))
		}
		if want.cores != 0 && (conf["cores"] != strconv.Itoa(want.cores) || conf["memory"] != strconv.Itoa(want.memoryMiB)) {
			problems = append(problems, fmt.Sprintf("VM %d has %s cores and %s MiB, want %d and %d", vmid, conf["cores"], conf["memory"], want.cores, want.memoryMiB))
		}
		if want.template != 0 && cloneOf[vmid] != want.template {
			problems = append(problems, fmt.Sprintf("VM %d is a clone of %d, want %d", vmid, cloneOf[vmid], want.template))
		}
	}
	if len(vms) != n {
		problems = append(problems, fmt.Sprintf("%d worker VMs on the fake %v, want %d", len(vms), keys(vms), n))
	}
	isos := 0
	for _, v := range l.PVE.Volumes() {
		switch {
		case v.Content == "iso" && strings.HasPrefix(v.VolID, "tenant-demo-iso:"):
			isos++
		case v.Owner != 0 && v.Owner < 9000 && !vms[v.Owner]:
			problems = append(problems, fmt.Sprintf("volume %s of VM %d, which is gone", v.VolID, v.Owner))
		}
	}
	if isos > n {
		problems = append(problems, fmt.Sprintf("%d bootstrap ISOs for %d VMs", isos, n))
	}
	pool, err := l.PVE.Client().Pool(ctx, "tenant-demo")
	if err != nil {
		t.Fatal(err)
	}
	members := 0
	for _, m := range pool.Members {
		if m.Type == "qemu" {
			members++
			if !vms[int(m.VMID)] {
				problems = append(problems, fmt.Sprintf("pool member %d is no worker VM", m.VMID))
			}
		}
	}
	if members != n {
		problems = append(problems, fmt.Sprintf("%d VMs in the pool, want %d", members, n))
	}
	for _, kind := range []string{"IPAddress", "IPAddressClaim"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("ipam.cluster.x-k8s.io/v1beta2")
		list.SetKind(kind + "List")
		if err := l.Client.List(ctx, list, client.InNamespace("tenant-demo")); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != n {
			problems = append(problems, fmt.Sprintf("%d %ss, want %d", len(list.Items), kind, n))
		}
	}
	return len(problems) == 0, strings.Join(problems, "\n") + "\n" + state
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The template of TestPoolLifecycle's rotation: the lab's image one Talos
// patch release on.
const (
	rotatedTemplate = 9001
	rotatedTalos    = "v1.13.7"
)

// createTalosTemplate makes a template of the lab's schematic for Talos
// version as `pxsubstrate template create <vmid> local-lvm --talos-version
// <version>` does (talostemplate.Create on pve1, tags of the version's
// own), and returns it.
func createTalosTemplate(t *testing.T, l *lab.Lab, vmid int, version string) talostemplate.Spec {
	t.Helper()
	spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: strconv.Itoa(vmid), Storage: pvelab.TemplateStorage,
		TalosVersion: version, SchematicID: labSchematic})
	if err != nil {
		t.Fatal(err)
	}
	res, err := talostemplate.Create(context.Background(), l.PVE.Client(), spec,
		talostemplate.CreateOptions{Node: pvelab.Nodes[0], PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("cannot create template %d: %v", vmid, err)
	}
	return res.Spec
}

// deleteCluster deletes the Cluster API Cluster name of ns, as deleting
// the tenant's cluster does, and returns it for the checks after.
func deleteCluster(t *testing.T, l *lab.Lab, ns, name string) *unstructured.Unstructured {
	t.Helper()
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	cluster.SetKind("Cluster")
	cluster.SetNamespace(ns)
	cluster.SetName(name)
	must(t, l.Client.Delete(context.Background(), cluster))
	return cluster
}

// clusterGone is the check that cluster is gone from the management API
// server, with its finalizers and status while it is not.
func clusterGone(t *testing.T, l *lab.Lab, cluster *unstructured.Unstructured) func() (bool, string) {
	t.Helper()
	return func() (bool, string) {
		err := l.Client.Get(context.Background(), client.ObjectKeyFromObject(cluster), cluster)
		return apierrors.IsNotFound(err), fmt.Sprintf("Cluster %s: %v, finalizers %v, status %v", cluster.GetName(), err, cluster.GetFinalizers(), cluster.Object["status"])
	}
}
