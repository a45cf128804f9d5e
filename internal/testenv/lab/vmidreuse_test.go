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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// pausedAnnotation is Cluster API's pause annotation, which capmox
// honours on a ProxmoxMachine: it does not reconcile it while it is set.
const pausedAnnotation = "cluster.x-k8s.io/paused"

// TestCapmoxVMIDReuse: what a tenant's vmIDRange is for (docs/capmoxrender.md,
// capmox issue 856), with capmox v0.9.0 on a pool pinned to pve1. A
// ProxmoxMachine A records a VM id whose VM is gone (destroyed by hand
// here; a failed clone leaves the same record), and while A still exists
// the pool grows by a worker B, then A's Machine is deleted. capmox's
// reconciling of A is paused until its Machine is deleted, so the order
// is certain.
//
//   - Inside the tenant's range, capmox clones B at an id no
//     ProxmoxMachine records, not at A's free id; A's delete finds its id
//     free and leaves B's VM alone (no destroy of it at all), and the pool
//     is its workers again.
//   - Without a range (the pool rendered again with the range taken out,
//     which rolls it onto new VMs), capmox clones B at the lowest free id,
//     A's; A's delete then destroys B's VM, with the tenant's capmox
//     token.
func TestCapmoxVMIDReuse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := startLab(t, capi.CapmoxV09)
	tn := readTenant(t)
	pool := &tn.Pools[0].Spec
	pool.Replicas = ptrTo(int32(1))
	pool.Proxmox.AllowedNodes = []string{"pve1"}
	ids := tenantplan.VMIDRange{Start: 1000, End: 1099}
	tn.Plan = func(pt *tenantplan.Tenant) { pt.VMIDRange = &ids }
	a, err := l.Apply(ctx, tn)
	must(t, err)
	shape := vmShape{diskGiB: 30}
	eventually(t, 4*time.Minute, "one worker", func() (bool, string) { return poolIsShaped(t, l, 1, shape) })

	// Inside the range.
	r := staleRecordThenGrow(t, l, tn, a, 2)
	if r.b.vmid == r.a.vmid || !ids.Contains(r.b.vmid) {
		t.Fatalf("inside the range %s, capmox cloned B (%s) at %d while A records %d, want another id of the range", ids, r.b.name, r.b.vmid, r.a.vmid)
	}
	deleteStaleRecord(t, l, r.a)
	if slices.Contains(destroyedIDs(l), r.b.vmid) {
		t.Errorf("VM %d of %s was destroyed", r.b.vmid, r.b.name)
	}
	if name := vmName(l, r.b.vmid); name != r.b.name {
		t.Errorf("VM %d is named %q after A's delete, want %s's", r.b.vmid, name, r.b.name)
	}
	eventually(t, 4*time.Minute, "two workers again", func() (bool, string) { return poolIsShaped(t, l, 2, shape) })
	t.Logf("inside the range %s: B cloned at %d, not at A's free id %d; A's delete left B's VM alone", ids, r.b.vmid, r.a.vmid)

	// Without a range.
	a.Spec.Tenants[0].VMIDRange = nil
	must(t, l.UpdatePools(ctx, tn, a))
	eventually(t, 4*time.Minute, "two workers outside the old range", func() (bool, string) {
		if ok, state := poolIsShaped(t, l, 2, shape); !ok {
			return false, state
		}
		vms := recordedVMs(t, l)
		return !slices.ContainsFunc(vms, ids.Contains), fmt.Sprintf("ProxmoxMachines record %v", vms)
	})
	r = staleRecordThenGrow(t, l, tn, a, 3)
	x := r.a.vmid
	if r.b.vmid != x {
		t.Fatalf("without a range, capmox cloned B (%s) at %d, want the lowest free id, %d, which A records", r.b.name, r.b.vmid, x)
	}
	deleteStaleRecord(t, l, r.a)
	var by string
	eventually(t, 3*time.Minute, fmt.Sprintf("capmox destroys VM %d, B's", x), func() (bool, string) {
		var ok bool
		by, ok = destroyAfterClone(l, x, r.destroy)
		return ok, fmt.Sprintf("no destroy of VM %d after B's clone", x)
	})
	if !strings.HasSuffix(by, "!capmox") {
		t.Errorf("VM %d, B's, was destroyed by %s, want the tenant's capmox token", x, by)
	}
	t.Logf("without a range: B cloned at A's free id %d, and A's delete destroyed B's VM (as %s)", x, by)
}

// staleRecord is one round of TestCapmoxVMIDReuse: the paused
// ProxmoxMachine A whose VM was destroyed, the task of that destroy, and
// the new ProxmoxMachine B with the VM it records.
type staleRecord struct {
	a       proxmoxMachine
	destroy string
	b       proxmoxMachine
}

// staleRecordThenGrow pauses capmox's reconciling of the ProxmoxMachine A
// with the lowest VM id, destroys A's VM as an operator would (stop, then
// destroy, with the fake's root token), grows the pool to replicas, and
// waits for the new ProxmoxMachine B to record a VM named after it.
func staleRecordThenGrow(t *testing.T, l *lab.Lab, tn lab.Tenant, a *lab.Applied, replicas int32) staleRecord {
	t.Helper()
	ctx := context.Background()
	before := proxmoxMachinesList(t, l)
	r := staleRecord{a: slices.MinFunc(before, func(p, q proxmoxMachine) int { return p.vmid - q.vmid })}
	x := r.a.vmid
	patchPMAnnotation(t, l, r.a.name, `"true"`)
	_, node, ok := l.PVE.VMConfig(x)
	if !ok {
		t.Fatalf("VM %d of %s is not on the fake", x, r.a.name)
	}
	must(t, l.PVE.Client().Post(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/status/stop", node, x), nil, &r.destroy))
	must(t, l.PVE.Client().Delete(ctx, fmt.Sprintf("/nodes/%s/qemu/%d", node, x), &r.destroy))
	eventually(t, time.Minute, fmt.Sprintf("VM %d is destroyed", x), func() (bool, string) {
		_, _, ok := l.PVE.VMConfig(x)
		return !ok, fmt.Sprintf("VM %d is still there (task %s)", x, r.destroy)
	})
	tn.Pools[0].Spec.Replicas = &replicas
	must(t, l.UpdatePools(ctx, tn, a))
	eventually(t, 3*time.Minute, "the new ProxmoxMachine records its VM", func() (bool, string) {
		pms := proxmoxMachinesList(t, l)
		for _, p := range pms {
			if !slices.ContainsFunc(before, func(q proxmoxMachine) bool { return q.name == p.name }) && p.vmid > 0 && vmName(l, p.vmid) == p.name {
				r.b = p
				return true, ""
			}
		}
		return false, fmt.Sprintf("ProxmoxMachines %v", pms)
	})
	return r
}

// deleteStaleRecord deletes the Machine of the paused ProxmoxMachine
// stale, lets capmox reconcile stale once Cluster API has asked for its
// deletion, and waits until it is gone.
func deleteStaleRecord(t *testing.T, l *lab.Lab, stale proxmoxMachine) {
	t.Helper()
	ctx := context.Background()
	m := &unstructured.Unstructured{}
	m.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	m.SetKind("Machine")
	m.SetNamespace("tenant-demo")
	m.SetName(stale.machine)
	if err := l.Client.Delete(ctx, m); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	now := func() (proxmoxMachine, bool) {
		pms := proxmoxMachinesList(t, l)
		i := slices.IndexFunc(pms, func(p proxmoxMachine) bool { return p.name == stale.name })
		if i < 0 {
			return proxmoxMachine{}, false
		}
		return pms[i], true
	}
	eventually(t, 3*time.Minute, "Cluster API deletes "+stale.name, func() (bool, string) {
		p, ok := now()
		return !ok || p.deleting, fmt.Sprintf("%+v", p)
	})
	patchPMAnnotation(t, l, stale.name, "null")
	eventually(t, 3*time.Minute, stale.name+" is gone", func() (bool, string) {
		p, ok := now()
		return !ok, fmt.Sprintf("%+v", p)
	})
}

// patchPMAnnotation sets the pause annotation of a ProxmoxMachine to value
// (JSON; null removes it).
func patchPMAnnotation(t *testing.T, l *lab.Lab, name, value string) {
	t.Helper()
	pm := &unstructured.Unstructured{}
	pm.SetAPIVersion(l.InfrastructureAPIVersion())
	pm.SetKind("ProxmoxMachine")
	pm.SetNamespace("tenant-demo")
	pm.SetName(name)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, pausedAnnotation, value)
	must(t, l.Client.Patch(context.Background(), pm, client.RawPatch(types.MergePatchType, []byte(patch))))
}

// vmName is the name in VM vmid's configuration, "" without the VM.
func vmName(l *lab.Lab, vmid int) string {
	conf, _, _ := l.PVE.VMConfig(vmid)
	return conf["name"]
}

// destroyAfterClone finds, in the fake's tasks in start order, the
// first clone that made VM vmid after the task upid (the hand's destroy of
// A's VM), and the first destroy of vmid after that clone: the destroy's
// user and whether there is one.
func destroyAfterClone(l *lab.Lab, vmid int, upid string) (string, bool) {
	tasks := l.PVE.Tasks()
	from := slices.IndexFunc(tasks, func(task pvefake.TaskInfo) bool { return task.UPID == upid })
	if from < 0 {
		return "", false
	}
	tasks = tasks[from+1:]
	clone := slices.IndexFunc(tasks, func(task pvefake.TaskInfo) bool {
		_, to, ok := clonedBy(task)
		return ok && to == vmid
	})
	if clone < 0 {
		return "", false
	}
	for _, task := range tasks[clone+1:] {
		if task.Type == "qmdestroy" && task.ID == fmt.Sprint(vmid) {
			return task.User, true
		}
	}
	return "", false
}
