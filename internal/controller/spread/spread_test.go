package spread_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/failuredomains"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/spread"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

const (
	ns      = "tenant-a"
	cluster = "kubernetes-a"
	pool    = "kubernetes-a-md0"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tenantToken is the tenant's capmox token as the tenant plan grants it:
// Sys.Audit on /nodes is what reads the nodes' state.
func tenantToken(t *testing.T, srv *pvefake.Server) (string, string) {
	t.Helper()
	must(t, srv.AddRole(tenantplan.RoleCapmox, tenantplan.CapmoxPrivileges(pveacl.PVE9).Names()...))
	must(t, srv.AddRole(tenantplan.RoleNodeAudit, "Sys.Audit"))
	must(t, srv.AddPool("tenant-a", "", nil, nil))
	user := "tenant-a-capmox@pve"
	must(t, srv.AddUser(user, pvefake.UserSpec{}))
	secret, err := srv.AddToken(user, "capmox", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	id := pveacl.TokenID(user, "capmox")
	for _, s := range []struct {
		kind    pveacl.SubjectKind
		subject string
	}{{pveacl.KindUser, user}, {pveacl.KindToken, id}} {
		must(t, srv.SetACL(pveacl.PoolPath("tenant-a"), s.kind, s.subject, false, tenantplan.RoleCapmox))
		must(t, srv.SetACL("/nodes", s.kind, s.subject, true, tenantplan.RoleNodeAudit))
	}
	return id, secret
}

// domain is one domain's MachineDeployment as the render writes it.
type domain struct {
	name, nodes string
	share       int32
	noShare     bool // an autoscaled pool's domain
}

func mdOf(d domain, size string) *clusterv1.MachineDeployment {
	ann := map[string]string{failuredomains.AnnotationNodes: d.nodes, failuredomains.AnnotationSize: size}
	if !d.noShare {
		ann[failuredomains.AnnotationShare] = itoa(d.share)
	}
	return &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pool + "-" + d.name, Annotations: ann,
			Labels: map[string]string{failuredomains.LabelPool: pool, failuredomains.LabelDomain: d.name}},
		Spec:   clusterv1.MachineDeploymentSpec{ClusterName: cluster, Replicas: ptr(d.share)},
		Status: clusterv1.MachineDeploymentStatus{ReadyReplicas: ptr(d.share)},
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func ptr[T any](v T) *T { return &v }

// lab is the fake Proxmox VE of three nodes, the tenant's credentials and
// a fake API holding the pool.
type lab struct {
	srv *pvefake.Server
	c   client.Client
	r   *spread.Reconciler
}

func newLab(t *testing.T, domains []domain, size string) *lab {
	t.Helper()
	srv := pvefake.NewServer(t, pvefake.WithTLS(), pvefake.WithNodes("pve1", "pve2", "pve3"))
	id, secret := tenantToken(t, srv)
	s := runtime.NewScheme()
	must(t, clusterv1.AddToScheme(s))
	must(t, corev1.AddToScheme(s))
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []string{"MachineDeployment", "Cluster"} {
		mapper.Add(clusterv1.GroupVersion.WithKind(k), meta.RESTScopeNamespace)
	}
	pc := &unstructured.Unstructured{}
	pc.SetAPIVersion(capmox.Group + "/v1alpha2")
	pc.SetKind(capmox.KindProxmoxCluster)
	mapper.Add(pc.GroupVersionKind(), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	pc.SetNamespace(ns)
	pc.SetName(cluster)
	must(t, unstructured.SetNestedField(pc.Object, map[string]any{"name": cluster + "-capmox"}, "spec", "credentialsRef"))
	objs := []client.Object{pc,
		&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster},
			Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: capmox.Group, Kind: capmox.KindProxmoxCluster, Name: cluster}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-capmox"},
			Data: map[string][]byte{"url": []byte(srv.URL), "token": []byte(id), "secret": []byte(secret), "root_ca": srv.CertificatePEM()}},
	}
	for _, d := range domains {
		objs = append(objs, mdOf(d, size))
	}
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).
		WithStatusSubresource(&clusterv1.MachineDeployment{}).Build()
	return &lab{srv: srv, c: c, r: &spread.Reconciler{Client: c, Reader: c, Log: logr.Discard()}}
}

// reconcile reconciles the domain's MachineDeployment once and returns
// the Events.
func (l *lab) reconcile(t *testing.T, name string) ([]string, engine.Result, error) {
	t.Helper()
	md := &clusterv1.MachineDeployment{}
	must(t, l.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pool + "-" + name}, md))
	rec := events.NewFakeRecorder(20)
	s := engine.NewState(md, l.c)
	s.Recorder = engine.EventsRecorder{Recorder: rec, Actions: spread.EventActions}
	res, err := l.r.Reconcile(context.Background(), s)
	close(rec.Events)
	var evs []string
	for e := range rec.Events {
		evs = append(evs, e)
	}
	return evs, res, err
}

// replicas are the domains' spec.replicas, by domain.
func (l *lab) replicas(t *testing.T, names ...string) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, n := range names {
		md := &clusterv1.MachineDeployment{}
		must(t, l.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pool + "-" + n}, md))
		out[n] = *md.Spec.Replicas
	}
	return out
}

// ready plays Cluster API: domain name has n ready workers.
func (l *lab) ready(t *testing.T, name string, n int32) {
	t.Helper()
	md := &clusterv1.MachineDeployment{}
	must(t, l.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pool + "-" + name}, md))
	md.Status.ReadyReplicas = &n
	must(t, l.c.Status().Update(context.Background(), md))
}

func wantReplicas(t *testing.T, step string, got, want map[string]int32) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: replicas %v, want %v", step, got, want)
		}
	}
}

// TestSpreadLossAndReturn: a domain whose every node goes offline gives
// its share to the others at once; when it comes back it is raised first,
// and the others give their extra workers back only once it runs them.
func TestSpreadLossAndReturn(t *testing.T) {
	three := []domain{{name: "pve1", nodes: "pve1", share: 2}, {name: "pve2", nodes: "pve2", share: 2}, {name: "pve3", nodes: "pve3", share: 2}}
	l := newLab(t, three, "6")
	evs, res, err := l.reconcile(t, "pve1")
	must(t, err)
	if len(evs) != 0 || res.RequeueAfter != spread.DefaultInterval {
		t.Fatalf("settled pool: events %q, result %+v", evs, res)
	}
	must(t, l.srv.SetNodeOnline("pve3", false))
	evs, _, err = l.reconcile(t, "pve1")
	must(t, err)
	wantReplicas(t, "pve3 lost", l.replicas(t, "pve1", "pve2", "pve3"), map[string]int32{"pve1": 3, "pve2": 3, "pve3": 0})
	if len(evs) != 3 || !strings.Contains(strings.Join(evs, "\n"), "Normal FailureDomainReplicasSet replicas 2 to 0: every node of failure domain pve3 is offline") {
		t.Fatalf("events %q", evs)
	}
	l.ready(t, "pve1", 3)
	l.ready(t, "pve2", 3)
	l.ready(t, "pve3", 0)
	must(t, l.srv.SetNodeOnline("pve3", true))
	_, _, err = l.reconcile(t, "pve2")
	must(t, err)
	wantReplicas(t, "pve3 back", l.replicas(t, "pve1", "pve2", "pve3"), map[string]int32{"pve1": 3, "pve2": 3, "pve3": 2})
	l.ready(t, "pve3", 1)
	_, _, err = l.reconcile(t, "pve3")
	must(t, err)
	wantReplicas(t, "pve3 starting", l.replicas(t, "pve1", "pve2", "pve3"), map[string]int32{"pve1": 3, "pve2": 3, "pve3": 2})
	l.ready(t, "pve3", 2)
	_, _, err = l.reconcile(t, "pve3")
	must(t, err)
	wantReplicas(t, "pve3 runs", l.replicas(t, "pve1", "pve2", "pve3"), map[string]int32{"pve1": 2, "pve2": 2, "pve3": 2})
}

// TestSpreadMultiNodeDomain: a domain is lost only when every one of its
// nodes is offline.
func TestSpreadMultiNodeDomain(t *testing.T) {
	two := []domain{{name: "a", nodes: "pve1", share: 2}, {name: "b", nodes: "pve2,pve3", share: 2}}
	l := newLab(t, two, "4")
	must(t, l.srv.SetNodeOnline("pve3", false))
	_, _, err := l.reconcile(t, "a")
	must(t, err)
	wantReplicas(t, "one node of b lost", l.replicas(t, "a", "b"), map[string]int32{"a": 2, "b": 2})
	must(t, l.srv.SetNodeOnline("pve2", false))
	_, _, err = l.reconcile(t, "a")
	must(t, err)
	wantReplicas(t, "every node of b lost", l.replicas(t, "a", "b"), map[string]int32{"a": 4, "b": 0})
}

// TestSpreadLeavesAlone: an autoscaled pool (no share) is the
// autoscaler's, and a pool whose domains do not add up to its size or
// disagree on it (a render half applied) waits, saying so in an Event.
func TestSpreadLeavesAlone(t *testing.T) {
	t.Run("Autoscaled", func(t *testing.T) {
		l := newLab(t, []domain{{name: "pve1", nodes: "pve1", noShare: true, share: 1}, {name: "pve2", nodes: "pve2", noShare: true, share: 1}}, "2")
		must(t, l.srv.SetNodeOnline("pve2", false))
		evs, res, err := l.reconcile(t, "pve1")
		if err != nil || len(evs) != 0 || res.RequeueAfter != 0 {
			t.Fatalf("autoscaled pool: %v %q %+v", err, evs, res)
		}
	})
	t.Run("HalfApplied", func(t *testing.T) {
		l := newLab(t, []domain{{name: "pve1", nodes: "pve1", share: 2}, {name: "pve2", nodes: "pve2", share: 2}}, "6")
		must(t, l.srv.SetNodeOnline("pve2", false))
		_, _, err := l.reconcile(t, "pve1")
		must(t, err)
		wantReplicas(t, "half applied", l.replicas(t, "pve1", "pve2"), map[string]int32{"pve1": 2, "pve2": 2})
	})
	t.Run("Disagree", func(t *testing.T) {
		l := newLab(t, []domain{{name: "pve1", nodes: "pve1", share: 2}, {name: "pve2", nodes: "pve2", share: 2}}, "4")
		md := &clusterv1.MachineDeployment{}
		must(t, l.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pool + "-pve2"}, md))
		md.Annotations[failuredomains.AnnotationSize] = "5"
		must(t, l.c.Update(context.Background(), md))
		must(t, l.srv.SetNodeOnline("pve2", false))
		evs, _, err := l.reconcile(t, "pve1")
		if err != nil || len(evs) != 1 || !strings.Contains(evs[0], "Normal FailureDomainsWaiting the MachineDeployments of pool kubernetes-a-md0 disagree on its size") {
			t.Fatalf("disagreeing pool: %v %q", err, evs)
		}
		wantReplicas(t, "disagreeing", l.replicas(t, "pve1", "pve2"), map[string]int32{"pve1": 2, "pve2": 2})
	})
}
