package heal_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/heal"
	"github.com/pxsubstrate/pxsubstrate/poolheal"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

const (
	ns      = "tenant-a"
	cluster = "kubernetes-a"
	md      = "kubernetes-a-md0"
	pool    = "tenant-a"
)

// vm is a guest of the fake's pool.
type vm struct {
	id      int
	name    string
	node    string
	pool    string
	running bool
	age     time.Duration
	tags    []string
	lock    string
}

// machine is a Machine of the pool and its ProxmoxMachine.
type machine struct {
	name         string
	vmid         int
	provisioned  bool
	node         bool // the Machine has a Node
	deleting     bool
	deleteFailed bool
	stopped      bool // StoppedAnnotation
}

// world is one pool: its Machines and the fake's VMs.
type world struct {
	unlabelled bool // the MachineDeployment lacks poolheal.Label
	all        bool // the controller heals every pool
	machines   []machine
	vms        []vm
	offline    []string
	noCreds    bool // the credentials Secret lacks its token
	v1alpha1   bool // capmox v0.7's ProxmoxMachines
}

// result is the end state the cases assert.
type result struct {
	gone, running []int // VMs destroyed, VMs running after
	retried       []string
	healed        map[poolheal.Kind]float64
	failed        bool
}

func TestHealReconcile(t *testing.T) {
	old := 10 * time.Minute
	cases := map[string]struct {
		w    world
		want result
	}{
		"DestroysLostClone": {w: world{machines: []machine{{name: "w1", vmid: 101, provisioned: true, node: true}},
			vms: []vm{{id: 100, name: "w1", running: true, age: old}, {id: 101, name: "w1", running: true, age: old}}},
			want: result{gone: []int{100}, running: []int{101}, healed: map[poolheal.Kind]float64{poolheal.KindDestroyLostClone: 1}}},
		"YoungCloneWaits": {w: world{machines: []machine{{name: "w1", vmid: 101, provisioned: true, node: true}},
			vms: []vm{{id: 100, name: "w1", age: time.Minute}, {id: 101, name: "w1", running: true, age: old}}},
			want: result{running: []int{101}}},
		"LockedCloneWaits": {w: world{machines: []machine{{name: "w1", vmid: 101}},
			vms: []vm{{id: 100, name: "w1", age: old, lock: "clone"}, {id: 101, name: "w1", age: old}}},
			want: result{}},
		"OtherPoolLeftAlone": {w: world{machines: []machine{{name: "w1", vmid: 101, provisioned: true, node: true}},
			vms: []vm{{id: 100, name: "w1", age: old, pool: "other"}, {id: 101, name: "w1", running: true, age: old}}},
			want: result{running: []int{101}}},
		"StartsNeverStarted": {w: world{machines: []machine{{name: "w1", vmid: 101, provisioned: true}},
			vms: []vm{{id: 101, name: "w1", age: old}}},
			want: result{running: []int{101}, healed: map[poolheal.Kind]float64{poolheal.KindStartStopped: 1}}},
		"StartsNeverStartedV1alpha1": {w: world{v1alpha1: true, machines: []machine{{name: "w1", vmid: 101, provisioned: true}},
			vms: []vm{{id: 101, name: "w1", age: old}}},
			want: result{running: []int{101}, healed: map[poolheal.Kind]float64{poolheal.KindStartStopped: 1}}},
		"StoppedByTagStays": {w: world{machines: []machine{{name: "w1", vmid: 101, provisioned: true}},
			vms: []vm{{id: 101, name: "w1", age: old, tags: []string{poolheal.StoppedTag}}}},
			want: result{}},
		"StoppedByAnnotationStays": {w: world{machines: []machine{{name: "w1", vmid: 101, provisioned: true, stopped: true}},
			vms: []vm{{id: 101, name: "w1", age: old}}},
			want: result{}},
		"UnlabelledPoolLeftAlone": {w: world{unlabelled: true, machines: []machine{{name: "w1", vmid: 101, provisioned: true}},
			vms: []vm{{id: 100, name: "w1", age: old}, {id: 101, name: "w1", age: old}}},
			want: result{}},
		"EveryPool": {w: world{unlabelled: true, all: true, machines: []machine{{name: "w1", vmid: 101, provisioned: true}},
			vms: []vm{{id: 100, name: "w1", age: old}, {id: 101, name: "w1", age: old}}},
			want: result{gone: []int{100}, running: []int{101},
				healed: map[poolheal.Kind]float64{poolheal.KindDestroyLostClone: 1, poolheal.KindStartStopped: 1}}},
		"RetriesDelete": {w: world{machines: []machine{{name: "w1", vmid: 101, provisioned: true, deleting: true, deleteFailed: true}},
			vms: []vm{{id: 101, name: "w1", node: "pve2", age: old}}},
			want: result{retried: []string{"w1"}, healed: map[poolheal.Kind]float64{poolheal.KindRetryDelete: 1}}},
		"DeleteWaitsForNode": {w: world{machines: []machine{{name: "w1", vmid: 101, provisioned: true, deleting: true, deleteFailed: true}},
			vms: []vm{{id: 101, name: "w1", node: "pve2", age: old}}, offline: []string{"pve2"}},
			want: result{}},
		"NoCredentials": {w: world{noCreds: true, machines: []machine{{name: "w1", vmid: 101, provisioned: true}},
			vms: []vm{{id: 100, name: "w1", age: old}, {id: 101, name: "w1", age: old}}},
			want: result{failed: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := run(t, tc.w)
			check(t, tc.w, tc.want, got)
		})
	}
}

// observed is what a run left.
type observed struct {
	srv     *pvefake.Server
	c       client.Client
	metrics *heal.Metrics
	reg     *prometheus.Registry
	err     error
	res     engine.Result
	events  []string
}

// run builds the world (the tenant's capmox token holding what the plan
// gives it), reconciles the MachineDeployment once and returns what is
// left.
func run(t *testing.T, w world) observed {
	t.Helper()
	ctx := context.Background()
	srv := pvefake.NewServer(t, pvefake.WithTLS(), pvefake.WithNodes("pve1", "pve2"))
	tokenID, secret := tenantToken(t, srv)
	now := time.Now()
	for _, v := range w.vms {
		p := v.pool
		if p == "" {
			p = pool
		}
		if err := srv.AddPool(p, "", nil, nil); err != nil && !strings.Contains(err.Error(), "exists") {
			t.Fatal(err)
		}
		conf := map[string]string{"meta": fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", now.Add(-v.age).Unix())}
		if v.lock != "" {
			conf["lock"] = v.lock
		}
		must(t, srv.AddVM(pvefake.VMSpec{VMID: v.id, Name: v.name, Node: or(v.node, "pve1"), Pool: p, Running: v.running, Tags: v.tags,
			Disks: map[string]string{"scsi0": "local-lvm:8"}, Config: conf}))
	}
	for _, n := range w.offline {
		must(t, srv.SetNodeOnline(n, false))
	}
	c := kube(t, w, objects(w, srv, tokenID, secret))
	reg := prometheus.NewRegistry()
	m, err := heal.NewMetrics(reg)
	must(t, err)
	rec := events.NewFakeRecorder(20)
	r := &heal.Reconciler{Client: c, Reader: c, All: w.all, Metrics: m, Log: logr.Discard()}
	d := &clusterv1.MachineDeployment{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: md}, d))
	s := engine.NewState(d, c)
	s.Recorder = engine.EventsRecorder{Recorder: rec, Actions: heal.EventActions}
	res, err := r.Reconcile(ctx, s)
	close(rec.Events)
	var evs []string
	for e := range rec.Events {
		evs = append(evs, e)
	}
	return observed{srv: srv, c: c, metrics: m, reg: reg, err: err, res: res, events: evs}
}

func check(t *testing.T, w world, want result, got observed) {
	t.Helper()
	if want.failed != (got.err != nil) {
		t.Fatalf("error %v, want failure %v", got.err, want.failed)
	}
	for _, v := range w.vms {
		_, _, exists := got.srv.VMConfig(v.id)
		gone := contains(want.gone, v.id)
		if exists == gone {
			t.Errorf("VM %d exists %v, want destroyed %v", v.id, exists, gone)
		}
		running, _, _ := got.srv.VMRunning(v.id)
		if exists && running != contains(want.running, v.id) {
			t.Errorf("VM %d running %v, want %v", v.id, running, contains(want.running, v.id))
		}
	}
	for _, vol := range got.srv.Volumes() {
		if contains(want.gone, vol.Owner) {
			t.Errorf("volume %s of destroyed VM %d is left", vol.VolID, vol.Owner)
		}
	}
	for _, m := range w.machines {
		pm := proxmoxMachine(t, got.c, w, m.name)
		_, retried := pm.GetAnnotations()[poolheal.RetryAnnotation]
		if retried != slices.Contains(want.retried, m.name) {
			t.Errorf("ProxmoxMachine %s annotated %v, want %v", m.name, retried, slices.Contains(want.retried, m.name))
		}
	}
	for _, k := range poolheal.Kinds {
		n := counter(t, got.reg, heal.MetricHealed, string(k))
		if n != want.healed[k] {
			t.Errorf("%s{kind=%s} = %v, want %v", heal.MetricHealed, k, n, want.healed[k])
		}
	}
	actions := 0
	for _, e := range got.events {
		if strings.HasPrefix(e, "Normal Heal") {
			actions++
		}
	}
	total := 0.0
	for _, n := range want.healed {
		total += n
	}
	if float64(actions) != total {
		t.Errorf("events %q, want one Normal event per action (%v)", got.events, total)
	}
	if takes := !w.unlabelled || w.all; takes != (got.res.RequeueAfter > 0) && !want.failed {
		t.Errorf("result %+v: a healing pool, and only one, is looked at again", got.res)
	}
}

// counter is the value of one series of a counter vector of reg.
func counter(t *testing.T, reg *prometheus.Registry, name, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series %s{kind=%s}", name, kind)
	return 0
}

// tenantToken makes the tenant's capmox token as the tenant plan grants
// it: CozyCapmox on the tenant's pool, Sys.Audit on /nodes.
func tenantToken(t *testing.T, srv *pvefake.Server) (string, string) {
	t.Helper()
	must(t, srv.AddRole(tenantplan.RoleCapmox, tenantplan.CapmoxPrivileges(pveacl.PVE9).Names()...))
	must(t, srv.AddRole(tenantplan.RoleNodeAudit, "Sys.Audit"))
	must(t, srv.AddPool(pool, "", nil, nil))
	user := "tenant-a-capmox@pve"
	must(t, srv.AddUser(user, pvefake.UserSpec{}))
	secret, err := srv.AddToken(user, "capmox", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	id := pveacl.TokenID(user, "capmox")
	for _, s := range []struct {
		kind    pveacl.SubjectKind
		subject string
	}{{pveacl.KindUser, user}, {pveacl.KindToken, id}} {
		must(t, srv.SetACL(pveacl.PoolPath(pool), s.kind, s.subject, false, tenantplan.RoleCapmox))
		must(t, srv.SetACL("/nodes", s.kind, s.subject, true, tenantplan.RoleNodeAudit))
	}
	return id, secret
}

func gvk(w world, kind string) schema.GroupVersionKind {
	v := "v1alpha2"
	if w.v1alpha1 {
		v = "v1alpha1"
	}
	return schema.GroupVersionKind{Group: capmox.Group, Version: v, Kind: kind}
}

func objects(w world, srv *pvefake.Server, tokenID, secret string) []client.Object {
	labels := map[string]string{poolheal.Label: "true"}
	if w.unlabelled {
		labels = nil
	}
	out := []client.Object{
		&clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: md, Labels: labels},
			Spec: clusterv1.MachineDeploymentSpec{ClusterName: cluster}},
		&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster},
			Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: capmox.Group, Kind: capmox.KindProxmoxCluster, Name: cluster}}},
	}
	pc := &unstructured.Unstructured{}
	pc.SetGroupVersionKind(gvk(w, capmox.KindProxmoxCluster))
	pc.SetNamespace(ns)
	pc.SetName(cluster)
	must(nil, unstructured.SetNestedField(pc.Object, map[string]any{"name": cluster + "-capmox"}, "spec", "credentialsRef"))
	data := map[string][]byte{"url": []byte(srv.URL), "token": []byte(tokenID), "secret": []byte(secret), "insecure": []byte("false"),
		"root_ca": srv.CertificatePEM()}
	if w.noCreds {
		delete(data, "token")
	}
	out = append(out, pc, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-capmox"}, Data: data})
	for _, m := range w.machines {
		cm := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.name, Labels: map[string]string{"cluster.x-k8s.io/deployment-name": md}},
			Spec: clusterv1.MachineSpec{ClusterName: cluster,
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: capmox.Group, Kind: capmox.KindProxmoxMachine, Name: m.name}}}
		if m.node {
			cm.Status.NodeRef = clusterv1.MachineNodeReference{Name: m.name}
		}
		pm := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"pool": pool}}}
		pm.SetGroupVersionKind(gvk(w, capmox.KindProxmoxMachine))
		pm.SetNamespace(ns)
		pm.SetName(m.name)
		if m.vmid > 0 {
			must(nil, unstructured.SetNestedField(pm.Object, int64(m.vmid), "spec", "virtualMachineID"))
		}
		if w.v1alpha1 {
			must(nil, unstructured.SetNestedField(pm.Object, m.provisioned, "status", "ready"))
		} else {
			must(nil, unstructured.SetNestedField(pm.Object, m.provisioned, "status", "initialization", "provisioned"))
		}
		if m.deleting {
			pm.SetFinalizers([]string{"proxmoxmachine.infrastructure.cluster.x-k8s.io"})
			pm.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		}
		if m.deleteFailed {
			typ := "VirtualMachineProvisioned"
			if w.v1alpha1 {
				typ = "VMProvisioned"
			}
			must(nil, unstructured.SetNestedSlice(pm.Object, []any{map[string]any{"type": typ, "status": "False", "reason": "DeletionFailed",
				"lastTransitionTime": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}}, "status", "conditions"))
		}
		if m.stopped {
			pm.SetAnnotations(map[string]string{poolheal.StoppedAnnotation: "maintenance"})
		}
		out = append(out, cm, pm)
	}
	return out
}

// kube is a fake API server that serves the world's capmox version only.
func kube(t *testing.T, w world, objs []client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	must(t, clusterv1.AddToScheme(s))
	must(t, corev1.AddToScheme(s))
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []string{capmox.KindProxmoxMachine, capmox.KindProxmoxCluster} {
		mapper.Add(gvk(w, k), meta.RESTScopeNamespace)
	}
	for _, k := range []string{"Machine", "MachineDeployment", "Cluster"} {
		mapper.Add(clusterv1.GroupVersion.WithKind(k), meta.RESTScopeNamespace)
	}
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	// The fake reads any version; an API server refuses one it does not
	// serve, as the step expects.
	served := func(o client.Object) error {
		if u, ok := o.(*unstructured.Unstructured); ok {
			_, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
			return err
		}
		return nil
	}
	return fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if err := served(o); err != nil {
				return err
			}
			return c.Get(ctx, key, o, opts...)
		},
	}).Build()
}

func proxmoxMachine(t *testing.T, c client.Client, w world, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk(w, capmox.KindProxmoxMachine))
	must(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u))
	return u
}

func contains(s []int, v int) bool { return slices.Contains(s, v) }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func must(t *testing.T, err error) {
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Helper()
		t.Fatal(err)
	}
}
