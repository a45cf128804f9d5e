package poolha_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/poolha"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/pveha"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// machine is a worker of pool md0 with ProxmoxMachine pm-<name> on VM vmid.
func machine(name string, vmid int64, provisioned, ha bool) []client.Object {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name,
		Labels:            map[string]string{capmox.LabelDeploymentName: "md0"},
		Annotations:       map[string]string{capmox.HookHA: capmox.HookOwner},
		CreationTimestamp: metav1.NewTime(time.Unix(1_800_000_000+vmid, 0))}}
	if ha {
		m.Labels[capmox.LabelHA] = "true"
	}
	m.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: capmox.Group, Kind: capmox.KindProxmoxMachine, Name: "pm-" + name}
	m.Status.Initialization.InfrastructureProvisioned = &provisioned
	pm := &unstructured.Unstructured{}
	pm.SetAPIVersion(capmox.Group + "/v1alpha2")
	pm.SetKind(capmox.KindProxmoxMachine)
	pm.SetNamespace("tenant-a")
	pm.SetName("pm-" + name)
	if err := unstructured.SetNestedField(pm.Object, vmid, "spec", "virtualMachineID"); err != nil {
		panic(err)
	}
	return []client.Object{m, pm}
}

type world struct {
	srv *pvefake.Server
	c   client.Client
	r   *poolha.Reconciler
	rec *events.FakeRecorder
}

func newWorld(t *testing.T, v pveacl.Version, withProxmox bool, objs ...client.Object) *world {
	t.Helper()
	srv, err := pvefake.New(pvefake.WithVersion(v), pvefake.WithNodes("pve1", "pve2", "pve3"))
	must(t, err)
	t.Cleanup(srv.Close)
	for id := 101; id <= 104; id++ {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: id, Node: "pve1", Running: true}))
	}
	s := runtime.NewScheme()
	must(t, clusterv1.AddToScheme(s))
	s.AddKnownTypeWithName(clusterv1.GroupVersion.WithKind("MachineDeployment"), &clusterv1.MachineDeployment{})
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	rec := events.NewFakeRecorder(100)
	r := &poolha.Reconciler{Client: c, Reader: c, Recorder: rec}
	if withProxmox {
		r.Proxmox = func(context.Context) (pveapi.Client, error) { return srv.Client(), nil }
	}
	return &world{srv: srv, c: c, r: r, rec: rec}
}

func (w *world) reconcile(t *testing.T, name string) {
	t.Helper()
	m := &clusterv1.Machine{}
	must(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "tenant-a", Name: name}, m))
	if _, err := w.r.Reconcile(context.Background(), engine.NewState(m, w.c)); err != nil {
		t.Fatal(err)
	}
}

// deleteAndReconcile deletes a Machine that Cluster API's finalizer
// holds, reconciles it and returns it as it is then.
func (w *world) deleteAndReconcile(t *testing.T, name string) *clusterv1.Machine {
	t.Helper()
	ctx := context.Background()
	m := &clusterv1.Machine{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: name}, m))
	m.Finalizers = []string{"machine.cluster.x-k8s.io"}
	must(t, w.c.Update(ctx, m))
	must(t, w.c.Delete(ctx, m))
	w.reconcile(t, name)
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(m), m))
	return m
}

func (w *world) events() []string {
	var out []string
	for {
		select {
		case e := <-w.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (w *world) sids(t *testing.T) []string {
	t.Helper()
	var list []pveha.Resource
	must(t, w.srv.Client().Get(context.Background(), "/cluster/ha/resources", &list))
	var out []string
	for _, r := range list {
		out = append(out, r.SID)
	}
	return out
}

// TestHAReconcileRegistersProvisionedWorkers: only provisioned workers of
// the pool become HA resources (an HA resource asks for its VM started,
// which would start a clone capmox has not finished), in one rule; the
// Event says the pool is kept apart.
func TestHAReconcileRegistersProvisionedWorkers(t *testing.T) {
	objs := slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true), machine("w3", 103, false, true), machine("other", 104, true, false))
	w := newWorld(t, pveacl.PVE9, true, objs...)
	w.reconcile(t, "w1")
	if got := w.sids(t); !slices.Equal(got, []string{"vm:101", "vm:102"}) {
		t.Errorf("HA resources %v, want the provisioned HA workers vm:101 and vm:102", got)
	}
	ev := strings.Join(w.events(), "\n")
	if !strings.Contains(ev, "Normal HAKeptApart the 2 workers of pool tenant-a/md0 are HA resources kept on different Proxmox nodes") {
		t.Errorf("events:\n%s", ev)
	}
}

// TestHAReconcileReleasesTheHook: a deleting Machine's VM leaves HA
// before the hook goes, so the destroy that follows is not refused; a
// Machine without the hook is left alone.
func TestHAReconcileReleasesTheHook(t *testing.T) {
	objs := slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true))
	w := newWorld(t, pveacl.PVE9, true, objs...)
	w.reconcile(t, "w1")
	ctx := context.Background()
	m := w.deleteAndReconcile(t, "w2")
	if _, ok := m.Annotations[capmox.HookHA]; ok {
		t.Errorf("the hook is still on the deleting Machine: %v", m.Annotations)
	}
	if got := w.sids(t); !slices.Equal(got, []string{"vm:101"}) {
		t.Errorf("HA resources after the release: %v", got)
	}
	var upid string
	must(t, w.srv.Client().Post(ctx, "/nodes/pve1/qemu/102/status/stop", map[string]string{}, &upid))
	must(t, w.srv.Client().Delete(ctx, "/nodes/pve1/qemu/102", &upid))
	if ev := strings.Join(w.events(), "\n"); !strings.Contains(ev, "Normal HAResourceRemoved removed HA resource vm:102 so that capmox can destroy the VM") {
		t.Errorf("events:\n%s", ev)
	}
}

// TestHAReconcileWithoutCredentials: without the pool HA token nothing is
// registered, the pool is told so, and a deleting Machine's hook is
// released at once rather than waited on forever.
func TestHAReconcileWithoutCredentials(t *testing.T) {
	w := newWorld(t, pveacl.PVE9, false, machine("w1", 101, true, true)...)
	w.reconcile(t, "w1")
	if got := w.sids(t); len(got) != 0 {
		t.Errorf("HA resources %v without credentials", got)
	}
	if ev := strings.Join(w.events(), "\n"); !strings.Contains(ev, "Warning HADisabled") {
		t.Errorf("events:\n%s", ev)
	}
	m := w.deleteAndReconcile(t, "w1")
	if _, ok := m.Annotations[capmox.HookHA]; ok {
		t.Errorf("the hook waits for a controller without credentials: %v", m.Annotations)
	}
}

// TestHAReconcilePVE8: Proxmox VE 8 is refused by version in an Event and
// nothing is written.
func TestHAReconcilePVE8(t *testing.T) {
	w := newWorld(t, pveacl.PVE8, true, slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true))...)
	w.reconcile(t, "w1")
	if got := w.sids(t); len(got) != 0 {
		t.Errorf("HA resources on PVE 8: %v", got)
	}
	ev := strings.Join(w.events(), "\n")
	if !strings.Contains(ev, "Warning HAUnsupported "+pveha.ErrUnsupported.Error()+": the cluster runs Proxmox VE 8.") {
		t.Errorf("events:\n%s", ev)
	}
}

// TestHASweep removes what was made for a pool that turned HA off, and
// keeps the others'.
func TestHASweep(t *testing.T) {
	objs := slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true))
	w := newWorld(t, pveacl.PVE9, true, objs...)
	w.reconcile(t, "w1")
	ctx := context.Background()
	for _, name := range []string{"w1", "w2"} {
		m := &clusterv1.Machine{}
		must(t, w.c.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: name}, m))
		delete(m.Labels, capmox.LabelHA)
		must(t, w.c.Update(ctx, m))
	}
	must(t, w.srv.Client().Post(ctx, "/cluster/ha/resources", map[string]string{"sid": "vm:104"}, nil))
	must(t, w.r.Sweep(ctx))
	if got := w.sids(t); !slices.Equal(got, []string{"vm:104"}) {
		t.Errorf("after the sweep: %v, want the operator's vm:104 alone", got)
	}
	var rules []pveha.Rule
	must(t, w.srv.Client().Get(ctx, "/cluster/ha/rules", &rules))
	if len(rules) != 0 {
		t.Errorf("rules after the sweep: %v", rules)
	}
}

// TestHAReconcileNotEnoughNodes: four workers on three Proxmox nodes are
// all HA resources, three of them in the rule, and the pool is told how
// many may share a node.
func TestHAReconcileNotEnoughNodes(t *testing.T) {
	objs := slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true), machine("w3", 103, true, true), machine("w4", 104, true, true))
	w := newWorld(t, pveacl.PVE9, true, objs...)
	w.reconcile(t, "w4")
	if got := w.sids(t); !slices.Equal(got, []string{"vm:101", "vm:102", "vm:103", "vm:104"}) {
		t.Errorf("HA resources %v", got)
	}
	var rules []pveha.Rule
	must(t, w.srv.Client().Get(context.Background(), "/cluster/ha/rules", &rules))
	if len(rules) != 1 || rules[0].Resources != "vm:101,vm:102,vm:103" {
		t.Errorf("rules %+v, want the three oldest workers in one", rules)
	}
	ev := strings.Join(w.events(), "\n")
	if !strings.Contains(ev, "Warning HANotEnoughNodes pool tenant-a/md0 has 4 workers and the Proxmox cluster 3 nodes: 3 workers are kept on different nodes, 1 may share a node with them") {
		t.Errorf("events:\n%s", ev)
	}
}
