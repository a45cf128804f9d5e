package lab_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/pveha"
)

var (
	controllerOnce sync.Once
	controllerBin  string
	controllerErr  error
)

// controller builds the proxmox-network-controller once per test binary.
func controller(t *testing.T) string {
	t.Helper()
	controllerOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			controllerErr = err
			return
		}
		dir, err := os.MkdirTemp("", "pxsubstrate-lab-controller-")
		if err != nil {
			controllerErr = err
			return
		}
		controllerBin = filepath.Join(dir, "proxmox-network-controller")
		cmd := exec.Command("go", "build", "-o", controllerBin, "./cmd/proxmox-network-controller")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			controllerErr = fmt.Errorf("go build ./cmd/proxmox-network-controller: %v\n%s", err, out)
		}
	})
	if controllerErr != nil {
		t.Fatal(controllerErr)
	}
	return controllerBin
}

// haResources lists the HA resources as root.
func haResources(t *testing.T, root *proxmox.Client) map[string]pveha.Resource {
	t.Helper()
	var list []pveha.Resource
	must(t, root.Get(context.Background(), "/cluster/ha/resources", &list))
	out := map[string]pveha.Resource{}
	for _, r := range list {
		out[r.SID] = r
	}
	return out
}

// workerVMs are the tenant's worker VMs and the node each runs on.
func workerVMs(t *testing.T, l *lab.Lab) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, g := range guests(l) {
		out[g.vmid] = g.node
	}
	return out
}

// guest is a worker VM on the fake: its id, node and configuration.
type guest struct {
	vmid int
	node string
	conf map[string]string
}

// guests are the VMs on the fake with ids below the templates' (9000 and
// up), by id.
func guests(l *lab.Lab) []guest {
	var out []guest
	for vmid := 100; vmid < 9000; vmid++ {
		if conf, node, ok := l.PVE.VMConfig(vmid); ok {
			out = append(out, guest{vmid: vmid, node: node, conf: conf})
		}
	}
	return out
}

// TestHAPoolWorkers runs the controller with the pool HA token beside the
// real Cluster API and capmox, the workers linked clones on shared storage. Without HA, a worker VM an operator made an
// HA resource keeps its Machine in Deleting: capmox's destroy gets
// qemu-server's refusal. With proxmox.ha, the controller makes each worker
// an HA resource in a negative rule; the HA manager recovers a worker
// whose node is lost onto the node no other worker of the pool uses; and a
// scale-down and the cluster's deletion go through, the pre-terminate
// hook held until the VM's HA resource is gone, leaving no HA resource,
// rule, VM or address behind.
func TestHAPoolWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := startLabWith(t, lab.Options{Controller: controller(t), PoolHA: true})
	root, err := l.Root()
	must(t, err)
	// HA recovers a VM onto another node only if its disks and its
	// bootstrap ISO are there too: the pool clones from a template on
	// shared (RBD) storage, linked, so every worker's disks are on it, and
	// the tenant's ISO storage is shared.
	addSharedTemplate(t, l, true)
	tn := readTenant(t)
	useSharedTemplate(&tn)
	a, err := l.Apply(ctx, tn)
	must(t, err)
	eventually(t, 4*time.Minute, "two workers without HA", func() (bool, string) { return poolIs(t, l, 2, 30) })

	// Without the hook: the operator's HA resources hold the VMs.
	for vmid := range workerVMs(t, l) {
		must(t, root.Post(ctx, "/cluster/ha/resources", map[string]string{"sid": pveha.SID(vmid)}, nil))
	}
	scale := func(replicas int32, ha bool) {
		t.Helper()
		tn.Pools[0].Spec.Replicas = &replicas
		tn.Pools[0].Spec.Proxmox.HA = ha
		must(t, l.UpdatePools(ctx, tn, a))
	}
	scale(1, false)
	var stuck unstructured.Unstructured
	eventually(t, 2*time.Minute, "a Machine in Deleting", func() (bool, string) {
		list := machineList(t, l)
		for _, m := range list.Items {
			if m.GetDeletionTimestamp() != nil {
				stuck = m
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Machines, none deleting", len(list.Items))
	})
	time.Sleep(30 * time.Second)
	must(t, l.Client.Get(ctx, client.ObjectKeyFromObject(&stuck), &stuck))
	if len(workerVMs(t, l)) != 2 || stuck.GetDeletionTimestamp() == nil {
		t.Fatalf("the VM of Machine %s went although it is HA-managed", stuck.GetName())
	}
	if log := l.Managers.Capmox.ReadOutput(); !strings.Contains(log, "used in HA resources and purge parameter not set") {
		t.Errorf("capmox's log does not show qemu-server's refusal; its tail:\n%s", tail(log, 20))
	}
	t.Logf("without the hook, Machine %s stays in Deleting for 30 s: qemu-server refuses to destroy its HA-managed VM", stuck.GetName())
	for vmid := range workerVMs(t, l) {
		must(t, root.Delete(ctx, "/cluster/ha/resources/"+pveha.SID(vmid), nil))
	}
	eventually(t, 3*time.Minute, "one worker once the operator's HA resources are gone", func() (bool, string) { return poolIs(t, l, 1, 30) })

	// With proxmox.ha: two workers, HA resources, kept apart.
	scale(2, true)
	apart := func() (bool, string) {
		ok, state := poolIs(t, l, 2, 30)
		if !ok {
			return false, state
		}
		vms, res := workerVMs(t, l), haResources(t, root)
		nodes := map[string]bool{}
		for vmid, node := range vms {
			r, ok := res[pveha.SID(vmid)]
			if !ok || !strings.HasPrefix(r.Comment, pveha.ResourceComment+"tenant-demo/") {
				return false, fmt.Sprintf("VM %d: HA resource %+v (present %v)", vmid, r, ok)
			}
			nodes[node] = true
		}
		if len(res) != 2 || len(nodes) != 2 {
			return false, fmt.Sprintf("HA resources %v, VMs %v", res, vms)
		}
		var rules []pveha.Rule
		must(t, root.Get(ctx, "/cluster/ha/rules", &rules))
		if len(rules) != 1 || len(rules[0].Members()) != 2 || rules[0].Affinity != "negative" || len(rules[0].Errors) > 0 {
			return false, fmt.Sprintf("rules %+v", rules)
		}
		return true, ""
	}
	eventually(t, 4*time.Minute, "two HA workers on different nodes", apart)
	for _, m := range machineList(t, l).Items {
		if m.GetAnnotations()[capmoxrender.HookHA] != capmoxrender.HookOwner || m.GetLabels()[capmoxrender.LabelHA] != "true" {
			t.Errorf("Machine %s: annotations %v, labels %v", m.GetName(), m.GetAnnotations(), m.GetLabels())
		}
	}

	// A node lost: its worker is recovered onto the third node.
	vms := workerVMs(t, l)
	ids := slices.Sorted(func(yield func(int) bool) {
		for id := range vms {
			if !yield(id) {
				return
			}
		}
	})
	lost, other := vms[ids[0]], vms[ids[1]]
	must(t, l.PVE.SetNodeOnline(lost, false))
	eventually(t, time.Minute, "the lost node's worker recovered", func() (bool, string) {
		now := workerVMs(t, l)
		r := haResources(t, root)[pveha.SID(ids[0])]
		return now[ids[0]] != lost && now[ids[0]] != other && now[ids[1]] == other && r.State == "started",
			fmt.Sprintf("VMs %v after losing %s; HA log %v", now, lost, l.PVE.HALog())
	})
	t.Logf("losing %s: VM %d recovered to %s, VM %d stays on %s", lost, ids[0], workerVMs(t, l)[ids[0]], ids[1], other)
	must(t, l.PVE.SetNodeOnline(lost, true))

	// Scaling down goes through the hook.
	scale(1, true)
	eventually(t, 3*time.Minute, "one HA worker after the scale-down", func() (bool, string) {
		ok, state := poolIs(t, l, 1, 30)
		res := haResources(t, root)
		var rules []pveha.Rule
		must(t, root.Get(ctx, "/cluster/ha/rules", &rules))
		return ok && len(res) == 1 && len(rules) == 0, fmt.Sprintf("%s\nHA resources %v, rules %v", state, res, rules)
	})

	deleteCluster(t, l, "tenant-demo", a.ClusterName)
	eventually(t, 3*time.Minute, "nothing left after the cluster's deletion", func() (bool, string) {
		ok, state := poolIs(t, l, 0, 0)
		res := haResources(t, root)
		return ok && len(res) == 0, fmt.Sprintf("%s\nHA resources %v", state, res)
	})
	if d, u, b := l.PVE.Denied(), l.PVE.Unserved(), l.PVE.BootErrors(); len(d)+len(u)+len(b) > 0 {
		t.Errorf("denied %v, unserved %v, boot errors %v", d, u, b)
	}
}

func machineList(t *testing.T, l *lab.Lab) *unstructured.UnstructuredList {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineList")
	must(t, l.Client.List(context.Background(), list, client.InNamespace("tenant-demo")))
	return list
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
