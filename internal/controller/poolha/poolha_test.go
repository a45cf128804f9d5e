package poolha_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/enginetest"
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

// newPVE is a Proxmox VE of version v with three nodes and VMs 101-104
// running on pve1.
func newPVE(t *testing.T, v pveacl.Version) *pvefake.Server {
	t.Helper()
	srv, err := pvefake.New(pvefake.WithVersion(v), pvefake.WithNodes("pve1", "pve2", "pve3"))
	must(t, err)
	t.Cleanup(srv.Close)
	for id := 101; id <= 104; id++ {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: id, Node: "pve1", Running: true}))
	}
	return srv
}

func haScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clusterv1.AddToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypeWithName(clusterv1.GroupVersion.WithKind("MachineDeployment"), &clusterv1.MachineDeployment{})
	return s
}

func sidsOf(t *testing.T, srv *pvefake.Server) []string {
	t.Helper()
	var list []pveha.Resource
	must(t, srv.Client().Get(context.Background(), "/cluster/ha/resources", &list))
	var out []string
	for _, r := range list {
		out = append(out, r.SID)
	}
	return out
}

// pve is the Proxmox VE of a case, which its step's New makes.
type pve struct{ srv *pvefake.Server }

// stepTest is a table of the pool HA step on the Proxmox VE of version v,
// with the pool HA token when withProxmox.
func (p *pve) stepTest(v pveacl.Version, withProxmox bool, cases map[string]enginetest.StepCase[*clusterv1.Machine]) enginetest.StepTest[*clusterv1.Machine] {
	return enginetest.StepTest[*clusterv1.Machine]{
		Scheme: haScheme(),
		New: func(t *testing.T, r enginetest.Rig) engine.Step[*clusterv1.Machine] {
			p.srv = newPVE(t, v)
			rc := &poolha.Reconciler{Client: r.Client, Reader: r.Client}
			if withProxmox {
				rc.Proxmox = func(context.Context) (pveapi.Client, error) { return p.srv.Client(), nil }
			}
			return rc
		},
		Cases: cases,
	}
}

// hasSIDs checks the HA resources of the case's Proxmox VE.
func (p *pve) hasSIDs(want ...string) func(*testing.T, client.Client) {
	return func(t *testing.T, _ client.Client) {
		t.Helper()
		if got := sidsOf(t, p.srv); !slices.Equal(got, want) {
			t.Errorf("HA resources %v, want %v", got, want)
		}
	}
}

// worker names the Machine reconciled.
func worker(name string) *clusterv1.Machine {
	return &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name}}
}

// deleting deletes the Machine that Cluster API's finalizer holds, so the
// step sees it terminating.
func deleting(name string) func(*testing.T, client.Client) {
	return func(t *testing.T, c client.Client) {
		t.Helper()
		ctx := context.Background()
		m := &clusterv1.Machine{}
		must(t, c.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: name}, m))
		m.Finalizers = []string{"machine.cluster.x-k8s.io"}
		must(t, c.Update(ctx, m))
		must(t, c.Delete(ctx, m))
	}
}

// md0 is the key of the pool's MachineDeployment, which its Events regard.
var md0 = client.ObjectKey{Namespace: "tenant-a", Name: "md0"}

// TestHAReconcileRegistersProvisionedWorkers: only provisioned workers of
// the pool become HA resources (an HA resource asks for its VM started,
// which would start a clone capmox has not finished), in one rule; the
// Event says the pool is kept apart. A Machine of a pool without HA is
// left alone.
func TestHAReconcileRegistersProvisionedWorkers(t *testing.T) {
	objs := slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true), machine("w3", 103, false, true), machine("other", 104, true, false))
	p := &pve{}
	p.stepTest(pveacl.PVE9, true, map[string]enginetest.StepCase[*clusterv1.Machine]{
		"ProvisionedWorkers": {Given: objs, Object: worker("w1"), ExpectResult: engine.Result{RequeueAfter: poolha.Requeue},
			ExpectEvents: []enginetest.Event{
				added(1), added(2),
				{Object: md0, Type: "Normal", Reason: poolha.ReasonKeptApart, Message: "the 2 workers of pool tenant-a/md0 are HA resources kept on different Proxmox nodes"},
			},
			Verify: p.hasSIDs("vm:101", "vm:102")},
		"NotHA": {Given: objs, Object: worker("other"), Verify: p.hasSIDs()},
	}).Run(t)
}

// TestHAReconcileReleasesTheHook: a deleting Machine's VM leaves HA
// before the hook goes, so the destroy that follows is not refused; a
// deleting Machine without the hook is left alone.
func TestHAReconcileReleasesTheHook(t *testing.T) {
	objs := slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true))
	p := &pve{}
	registered := func(t *testing.T, c client.Client) {
		t.Helper()
		st, err := pveha.Read(context.Background(), p.srv.Client())
		must(t, err)
		plan, err := pveha.NewPlan(st, []pveha.Pool{{Name: "tenant-a/md0", Workers: []pveha.Worker{{Machine: "tenant-a/w1", VMID: 101}, {Machine: "tenant-a/w2", VMID: 102}}}}, pveha.Options{})
		must(t, err)
		must(t, pveha.Apply(context.Background(), p.srv.Client(), plan))
		deleting("w2")(t, c)
	}
	unhooked := slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true))
	delete(unhooked[2].(*clusterv1.Machine).Annotations, capmox.HookHA)
	p.stepTest(pveacl.PVE9, true, map[string]enginetest.StepCase[*clusterv1.Machine]{
		"Registered": {Given: objs, Object: worker("w2"), Prepare: registered,
			ExpectWrites: []enginetest.Write{{Verb: "patch", Kind: "Machine", Key: client.ObjectKey{Namespace: "tenant-a", Name: "w2"}}},
			ExpectEvents: []enginetest.Event{{Object: client.ObjectKey{Namespace: "tenant-a", Name: "w2"}, Type: "Normal", Reason: poolha.ReasonResourceRemoved,
				Message: "removed HA resource vm:102 so that capmox can destroy the VM"}},
			Verify: func(t *testing.T, c client.Client) {
				p.hasSIDs("vm:101")(t, c)
				m := &clusterv1.Machine{}
				must(t, c.Get(context.Background(), client.ObjectKey{Namespace: "tenant-a", Name: "w2"}, m))
				if _, ok := m.Annotations[capmox.HookHA]; ok {
					t.Errorf("the hook is still on the deleting Machine: %v", m.Annotations)
				}
				var upid string
				must(t, p.srv.Client().Post(context.Background(), "/nodes/pve1/qemu/102/status/stop", map[string]string{}, &upid))
				must(t, p.srv.Client().Delete(context.Background(), "/nodes/pve1/qemu/102", &upid))
			}},
		"NoHook": {Given: unhooked, Object: worker("w2"), Prepare: deleting("w2"), Verify: p.hasSIDs()},
	}).Run(t)
}

// TestHAReconcileWithoutCredentials: without the pool HA token nothing is
// registered, the pool is told so, and a deleting Machine's hook is
// released at once rather than waited on forever.
func TestHAReconcileWithoutCredentials(t *testing.T) {
	objs := machine("w1", 101, true, true)
	w1 := client.ObjectKey{Namespace: "tenant-a", Name: "w1"}
	p := &pve{}
	p.stepTest(pveacl.PVE9, false, map[string]enginetest.StepCase[*clusterv1.Machine]{
		"Disabled": {Given: objs, Object: worker("w1"), Verify: p.hasSIDs(),
			ExpectEvents: []enginetest.Event{{Object: w1, Type: "Warning", Reason: poolha.ReasonDisabled,
				Message: "the pool has proxmox.ha, but the controller runs without --proxmox-ha-credentials: its workers are not Proxmox HA resources"}}},
		"ReleasedAtOnce": {Given: objs, Object: worker("w1"), Prepare: deleting("w1"),
			ExpectWrites: []enginetest.Write{{Verb: "patch", Kind: "Machine", Key: w1}}},
	}).Run(t)
}

// TestHAReconcilePVE8: Proxmox VE 8 is refused by version in an Event and
// nothing is written.
func TestHAReconcilePVE8(t *testing.T) {
	p := &pve{}
	p.stepTest(pveacl.PVE8, true, map[string]enginetest.StepCase[*clusterv1.Machine]{
		"Refused": {Given: slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true)), Object: worker("w1"),
			ExpectResult: engine.Result{RequeueAfter: poolha.Requeue}, Verify: p.hasSIDs(),
			ExpectEvents: []enginetest.Event{{Object: md0, Type: "Warning", Reason: poolha.ReasonUnsupported,
				Message: pveha.ErrUnsupported.Error() + ": the cluster runs Proxmox VE 8.4: the pool's workers are not registered with Proxmox HA"}}},
	}).Run(t)
}

// TestHASweep removes what was made for a pool that turned HA off, and
// keeps the others'.
func TestHASweep(t *testing.T) {
	srv := newPVE(t, pveacl.PVE9)
	c := fake.NewClientBuilder().WithScheme(haScheme()).WithObjects(slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true))...).Build()
	r := &poolha.Reconciler{Client: c, Reader: c, Proxmox: func(context.Context) (pveapi.Client, error) { return srv.Client(), nil }}
	ctx := context.Background()
	m := &clusterv1.Machine{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "w1"}, m))
	_, err := r.Reconcile(ctx, engine.NewState(m, client.Client(c)))
	must(t, err)
	for _, name := range []string{"w1", "w2"} {
		m := &clusterv1.Machine{}
		must(t, c.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: name}, m))
		delete(m.Labels, capmox.LabelHA)
		must(t, c.Update(ctx, m))
	}
	must(t, srv.Client().Post(ctx, "/cluster/ha/resources", map[string]string{"sid": "vm:104"}, nil))
	must(t, r.Sweep(ctx))
	if got := sidsOf(t, srv); !slices.Equal(got, []string{"vm:104"}) {
		t.Errorf("after the sweep: %v, want the operator's vm:104 alone", got)
	}
	var rules []pveha.Rule
	must(t, srv.Client().Get(ctx, "/cluster/ha/rules", &rules))
	if len(rules) != 0 {
		t.Errorf("rules after the sweep: %v", rules)
	}
}

// added is the Event of worker w<i>'s VM 10<i> becoming an HA resource.
func added(i int) enginetest.Event {
	return enginetest.Event{Object: md0, Type: "Normal", Reason: poolha.ReasonResourceAdded,
		Message: fmt.Sprintf("vm:10%d is an HA resource: the VM of Machine tenant-a/w%d is no HA resource", i, i)}
}

// TestHAReconcileNotEnoughNodes: four workers on three Proxmox nodes are
// all HA resources, three of them in the rule, and the pool is told how
// many may share a node.
func TestHAReconcileNotEnoughNodes(t *testing.T) {
	p := &pve{}
	p.stepTest(pveacl.PVE9, true, map[string]enginetest.StepCase[*clusterv1.Machine]{
		"FourOnThree": {Given: slices.Concat(machine("w1", 101, true, true), machine("w2", 102, true, true), machine("w3", 103, true, true), machine("w4", 104, true, true)),
			Object: worker("w4"), ExpectResult: engine.Result{RequeueAfter: poolha.Requeue},
			ExpectEvents: []enginetest.Event{
				added(1), added(2), added(3), added(4),
				{Object: md0, Type: "Warning", Reason: poolha.ReasonNotEnoughNodes, Message: "pool tenant-a/md0 has 4 workers and the Proxmox cluster 3 nodes: 3 workers are kept on different nodes, 1 may share a node with them; add Proxmox nodes or shrink the pool"},
			},
			Verify: func(t *testing.T, c client.Client) {
				p.hasSIDs("vm:101", "vm:102", "vm:103", "vm:104")(t, c)
				var rules []pveha.Rule
				must(t, p.srv.Client().Get(context.Background(), "/cluster/ha/rules", &rules))
				if len(rules) != 1 || rules[0].Resources != "vm:101,vm:102,vm:103" {
					t.Errorf("rules %+v, want the three oldest workers in one", rules)
				}
			}},
	}).Run(t)
}
