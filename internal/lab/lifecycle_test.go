package lab_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/lab"
)

// TestPoolLifecycle takes the seed's pool through its life with the real
// providers, each step asserted on the Proxmox fake and in Cluster API:
// two workers grow to three and shrink to one (each removed Machine's VM
// stopped and destroyed, its disks and bootstrap ISO freed, its address
// back in the IPAM pool, its VM id free); a larger diskSize rolls the pool
// onto new VMs with the new size and no old VM left; deleting the cluster
// leaves nothing of the tenant on Proxmox (no VM, disk, ISO or pool
// member) and nothing in the IPAM pool.
func TestPoolLifecycle(t *testing.T) {
	ctx := context.Background()
	l := startLab(t, "")
	tn := readTenant(t)
	a, err := l.Apply(ctx, tn)
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, replicas int32, diskGiB int) {
		t.Helper()
		eventually(t, 4*time.Minute, what, func() (bool, string) {
			return poolIs(t, l, int(replicas), diskGiB)
		})
		t.Logf("%s: %d workers of %d GiB run, nothing else is left", what, replicas, diskGiB)
	}
	step("two workers", 2, 30)

	resize := func(replicas int32, disk string) {
		t.Helper()
		tn.Pools[0].Spec.Replicas = &replicas
		q := capmoxrender.Quantity(disk)
		tn.Pools[0].Spec.DiskSize = &q
		must(t, l.UpdatePools(ctx, tn, a))
	}
	resize(3, "30Gi")
	step("scaled up to three", 3, 30)
	resize(1, "30Gi")
	step("scaled down to one", 1, 30)
	resize(1, "40Gi")
	step("diskSize 30Gi to 40Gi", 1, 40)

	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	cluster.SetKind("Cluster")
	cluster.SetNamespace("tenant-demo")
	cluster.SetName(a.ClusterName)
	must(t, l.Client.Delete(ctx, cluster))
	step("cluster deleted", 0, 0)
	eventually(t, 2*time.Minute, "the Cluster goes", func() (bool, string) {
		err := l.Client.Get(ctx, client.ObjectKeyFromObject(cluster), cluster)
		return apierrors.IsNotFound(err), fmt.Sprintf("Cluster %s: %v, finalizers %v, status %v", a.ClusterName, err, cluster.GetFinalizers(), cluster.Object["status"])
	})
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
	ctx := context.Background()
	running, state := machines(t, l.Client, "tenant-demo")
	var problems []string
	if total := strings.Count(state, "phase="); total != n || running != n {
		problems = append(problems, fmt.Sprintf("%d Machines, %d Running, want %d", total, running, n))
	}
	vms := map[int]bool{}
	for vmid := 100; vmid < 9000; vmid++ {
		conf, _, ok := l.PVE.VMConfig(vmid)
		if !ok {
			continue
		}
		vms[vmid] = true
		if !strings.Contains(conf["scsi0"], fmt.Sprintf("size=%dG", diskGiB)) {
			problems = append(problems, fmt.Sprintf("VM %d has scsi0 %q, want %d GiB", vmid, conf["scsi0"], diskGiB))
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
