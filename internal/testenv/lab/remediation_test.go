package lab_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// The strings kube-controller-manager's node lifecycle controller writes on
// a Node whose kubelet stopped posting status (tryUpdateNodeHealth in
// pkg/controller/nodelifecycle/node_lifecycle_controller.go).
const (
	nodeStatusUnknown  = "NodeStatusUnknown"
	kubeletStoppedPost = "Kubelet stopped posting node status."
)

// worker is a Machine of the pool as a test reads it.
type worker struct {
	machine, providerID, node string
	deleting                  bool
	phase                     string
}

// workers reads the tenant's Machines.
func workers(t *testing.T, l *lab.Lab) []worker {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineList")
	must(t, l.Client.List(context.Background(), list, client.InNamespace("tenant-demo")))
	var out []worker
	for _, m := range list.Items {
		w := worker{machine: m.GetName(), deleting: m.GetDeletionTimestamp() != nil}
		w.providerID, _, _ = unstructured.NestedString(m.Object, "spec", "providerID")
		w.node, _, _ = unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		w.phase, _, _ = unstructured.NestedString(m.Object, "status", "phase")
		out = append(out, w)
	}
	return out
}

// vmOf finds the VM whose SMBIOS UUID is the provider ID's: its VMID and
// node, 0 when no VM has it.
func vmOf(l *lab.Lab, providerID string) (int, string) {
	uuid := strings.TrimPrefix(providerID, "proxmox://")
	for _, g := range guests(l) {
		if uuid != "" && strings.Contains(g.conf["smbios1"], "uuid="+uuid) {
			return g.vmid, g.node
		}
	}
	return 0, ""
}

// readyOf is the Ready condition of a tenant Node; ok is false when the
// Node is gone.
func readyOf(t *testing.T, l *lab.Lab, name string) (corev1.NodeCondition, bool) {
	t.Helper()
	var n corev1.Node
	err := l.TenantClient.Get(context.Background(), client.ObjectKey{Name: name}, &n)
	if apierrors.IsNotFound(err) {
		return corev1.NodeCondition{}, false
	}
	must(t, err)
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c, true
		}
	}
	return corev1.NodeCondition{}, true
}

// TestPoolLifecycleRemediation: the MachineHealthCheck our render writes
// (readyUnknownTimeout compressed to 20s) remediates a worker whose VM
// stops and one whose Proxmox node goes offline. The lab's VMs' kubelets
// post their Nodes' status while the VM runs, and kube-controller-manager's
// node lifecycle controller (grace 10s) sets Ready to Unknown,
// NodeStatusUnknown, once they stop. The pool's template is on shared
// storage and allowedNodes names every node, so replacements may go
// anywhere. After each fault a new Machine runs on a new VM, the old
// Machine, VM and Node are gone, and the pool is back to two workers with
// nothing left over. A node that goes offline holds its worker's deletion:
// capmox's DELETE is answered 595 (go-proxmox: "cannot find node with name
// <node>"), the ProxmoxMachine reports DeletionFailed, and Cluster API
// makes no replacement while the old Machine is deleting; once the node is
// back the VM is destroyed and the replacement comes up. controller-
// runtime retries a failing reconcile with a backoff that doubles up to
// 1000s, so after an outage capmox may not look again for minutes: the
// test, as an operator would, touches the ProxmoxMachine (an annotation)
// once the node is back, which makes capmox reconcile it at once.
func TestPoolLifecycleRemediation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := startLabWith(t, lab.Options{NodeMonitorGracePeriod: 10 * time.Second})
	addSharedTemplate(t, l, false)
	tn := readTenant(t)
	tn.Pools[0].Spec.ReadyUnknownTimeout = "20s"
	tn.Pools[0].Spec.Proxmox.AllowedNodes = pvelab.Nodes
	useSharedTemplate(&tn)
	if _, err := l.Apply(ctx, tn); err != nil {
		t.Fatal(err)
	}
	eventually(t, 4*time.Minute, "two workers", func() (bool, string) { return poolIs(t, l, 2, 30) })

	// (a) A worker's VM stops.
	victim := workers(t, l)[0]
	vmid, node := vmOf(l, victim.providerID)
	destroyed := []int{vmid}
	var upid string
	must(t, l.PVE.Client().Post(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/status/stop", node, vmid), nil, &upid))
	t.Logf("VM %d on %s (Machine %s) stopped", vmid, node, victim.machine)
	nodeGoesUnknown(t, l, victim)
	replaced(t, l, victim)

	// (b) A worker's Proxmox node goes offline.
	victim, node = loneWorker(t, l)
	offlineVM, _ := vmOf(l, victim.providerID)
	destroyed = append(destroyed, offlineVM)
	must(t, l.PVE.SetNodeOnline(node, false))
	t.Logf("%s offline, with Machine %s", node, victim.machine)
	nodeGoesUnknown(t, l, victim)
	eventually(t, 2*time.Minute, "the Machine is deleting and capmox cannot destroy its VM", func() (bool, string) {
		ws := workers(t, l)
		msgs := machineMessages(t, l)
		for _, w := range ws {
			if w.machine == victim.machine && w.deleting && strings.Contains(msgs, victim.machine+" VirtualMachineProvisioned/DeletionFailed") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v\n%s", ws, msgs)
	})
	// No replacement while the old Machine is deleting, and its VM is
	// still there.
	if ws := workers(t, l); len(ws) != 2 {
		t.Errorf("with %s offline: Machines %+v, want the deleting one and the other", node, ws)
	}
	if v, _ := vmOf(l, victim.providerID); v == 0 {
		t.Errorf("the VM of %s went while %s was offline", victim.machine, node)
	}
	if log := l.Managers.Capmox.ReadOutput(); !strings.Contains(log, "cannot find node with name "+node) {
		t.Errorf("capmox's log lacks %q", "cannot find node with name "+node)
	}
	must(t, l.PVE.SetNodeOnline(node, true))
	pm := &unstructured.Unstructured{}
	pm.SetAPIVersion(l.InfrastructureAPIVersion())
	pm.SetKind("ProxmoxMachine")
	must(t, l.Client.Get(ctx, client.ObjectKey{Namespace: "tenant-demo", Name: victim.machine}, pm))
	pm.SetAnnotations(map[string]string{"lab.pxsubstrate.io/node-back": node})
	must(t, l.Client.Update(ctx, pm))
	replaced(t, l, victim)
	if d, b := deniedBut(l, destroyed), l.PVE.BootErrors(); len(d)+len(b) > 0 {
		t.Errorf("denied %v, boot errors %v", d, b)
	}
}

// vmReadPath matches a read of a VM: /nodes/<node>/qemu/<vmid>/...
var vmReadPath = regexp.MustCompile(`/nodes/[^/]+/qemu/([0-9]+)(/|$)`)

// deniedBut is what the fake refused, but reads of the VM ids destroyed:
// PVE checks a token's privileges before it looks for the VM, so once a
// VM has left the tenant's pool a read of it is refused (403), and capmox
// and the CCM may look once more before they learn it is gone (a clone
// may take the id again later). Every other refusal, any write among them,
// is kept; the heal tests do the same with the VMs healing destroyed
// (destroyedIDs), the other lab tests keep every refusal.
func deniedBut(l *lab.Lab, destroyed []int) []pvefake.Request {
	return slices.DeleteFunc(l.PVE.Denied(), func(r pvefake.Request) bool {
		m := vmReadPath.FindStringSubmatch(r.Path)
		if r.Method != http.MethodGet || m == nil {
			return false
		}
		id, err := strconv.Atoi(m[1])
		return err == nil && slices.Contains(destroyed, id)
	})
}

// nodeGoesUnknown waits for the Node of w to be Ready=Unknown as the node
// lifecycle controller writes it.
func nodeGoesUnknown(t *testing.T, l *lab.Lab, w worker) {
	t.Helper()
	eventually(t, time.Minute, "node "+w.node+" goes Unknown", func() (bool, string) {
		c, ok := readyOf(t, l, w.node)
		return ok && c.Status == corev1.ConditionUnknown && c.Reason == nodeStatusUnknown && c.Message == kubeletStoppedPost,
			fmt.Sprintf("Ready %+v (node there: %v)", c, ok)
	})
}

// replaced waits until w's Machine, VM and Node are gone and the pool is
// back to two Running workers with nothing left over, one of them new.
func replaced(t *testing.T, l *lab.Lab, w worker) {
	t.Helper()
	eventually(t, 4*time.Minute, "Machine "+w.machine+" is replaced", func() (bool, string) {
		ok, state := poolIs(t, l, 2, 30)
		ws := workers(t, l)
		for _, x := range ws {
			if x.machine == w.machine || x.providerID == w.providerID {
				ok = false
			}
		}
		if v, _ := vmOf(l, w.providerID); v != 0 {
			ok, state = false, fmt.Sprintf("VM %d of %s is still there\n%s", v, w.machine, state)
		}
		if _, there := readyOf(t, l, w.node); there {
			ok, state = false, fmt.Sprintf("node %s is still there\n%s", w.node, state)
		}
		return ok, state
	})
	t.Logf("Machine %s replaced: %+v", w.machine, workers(t, l))
}

// loneWorker returns a worker whose Proxmox node holds no other worker,
// and that node.
func loneWorker(t *testing.T, l *lab.Lab) (worker, string) {
	t.Helper()
	ws := workers(t, l)
	on := map[string]int{}
	nodeOf := map[string]string{}
	for _, w := range ws {
		_, n := vmOf(l, w.providerID)
		on[n]++
		nodeOf[w.machine] = n
	}
	for _, w := range ws {
		if on[nodeOf[w.machine]] == 1 {
			return w, nodeOf[w.machine]
		}
	}
	t.Fatalf("no Proxmox node holds a lone worker: %v", on)
	return worker{}, ""
}
