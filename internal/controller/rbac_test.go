package controller_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pki"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

const watchList = "informers list where the API server does not stream lists through watches"

// serviceAccount is the user the controller runs as in the manifests.
const serviceAccount = "system:serviceaccount:cozy-proxmox-network:proxmox-network-controller"

// grant is one verb on one resource (with subresource), in a namespace for
// a Role, on one name when the rule names resources.
type grant struct{ Group, Resource, Verb, Namespace, Name string }

func (g grant) String() string {
	s := g.Verb + " " + g.Group + "/" + g.Resource
	if g.Namespace != "" {
		s += " in " + g.Namespace
	}
	if g.Name != "" {
		s += " named " + g.Name
	}
	return s
}

// unusedOnPurpose are grants a full lifecycle does not exercise, each
// needed on a path the test does not take.
var unusedOnPurpose = map[string]string{
	// Informers of client-go 1.37 stream their initial list through a
	// watch (WatchList); against an API server without it, or after it
	// fails, they list.
	"list /namespaces": watchList,
	"list /nodes":      watchList,
	"list ipam.cluster.x-k8s.io/inclusterippools":   watchList,
	"list kubeovn.io/provider-networks":             watchList,
	"list kubeovn.io/subnets":                       watchList,
	"list proxmox.cozystack.io/proxmoxnetworkzones": watchList,

	"get proxmox.cozystack.io/proxmoxnetworks":   "orphan collection and gateway garbage collection confirm a network is gone with an uncached read",
	"get proxmox.cozystack.io/proxmoxvlanclaims": "an allocation whose claim already exists reads it back uncached",
	"patch events.k8s.io/events":                 "the event broadcaster patches an event into a series when the same event repeats within minutes",

	// Pool HA acts only on Machines of pools rendered with proxmox.ha,
	// which a network lifecycle has none of; internal/testenv/lab's TestHAPoolWorkers
	// runs that path with the real Cluster API and capmox, the controller
	// impersonating this ServiceAccount under config/rbac's role.
	"list cluster.x-k8s.io/machines":                      "pool HA lists a pool's Machines uncached (and informers list without WatchList)",
	"patch cluster.x-k8s.io/machines":                     "pool HA releases the pre-terminate hook of a deleting Machine",
	"get infrastructure.cluster.x-k8s.io/proxmoxmachines": "pool HA reads a Machine's VM id",
	"get cluster.x-k8s.io/machinedeployments":             "pool HA names the MachineDeployment in its Events",

	// The VPC address step acts only on the net0 claims of capmox v0.8+
	// workers on a VPC subnet; internal/lab's TestVPCWorkers runs it with
	// the real Cluster API, IPAM provider and capmox.
	"list ipam.cluster.x-k8s.io/ipaddressclaims":   watchList,
	"get ipam.cluster.x-k8s.io/ipaddressclaims":    "the VPC address step reads a claim's subnet claim",
	"create ipam.cluster.x-k8s.io/ipaddressclaims": "the VPC address step claims an address of the subnet's pool",
	"get ipam.cluster.x-k8s.io/ipaddresses":        "the VPC address step reads the subnet claim's address",
	"create ipam.cluster.x-k8s.io/ipaddresses":     "the VPC address step writes the claim's address",
}

// TestAgainstAPIServer applies every manifest to a real API server (dry
// run, then for real), and runs the controller in-process as the
// manifests' ServiceAccount, impersonated, through a full network
// lifecycle with gateways on a real ovsdb-server over TLS: every call it
// makes must be allowed, and every verb the RBAC grants must be used.
func TestAgainstAPIServer(t *testing.T) {
	cfg, admin := controllertest.StartAPIServer(t)
	controllertest.Setup(t, admin, "node-1", "node-2")
	install := build(t, "config")
	t.Run("DryRun/config", func(t *testing.T) { applyAll(t, admin, install, true) })
	t.Run("DryRun/config-webhook", func(t *testing.T) { applyAll(t, admin, build(t, "config/webhook"), true) })
	applyAll(t, admin, install, false)
	if t.Failed() {
		t.FailNow()
	}
	t.Run("RBAC", func(t *testing.T) { testRBAC(t, cfg, admin, install) })
}

func testRBAC(t *testing.T, cfg *rest.Config, admin client.Client, install []*unstructured.Unstructured) {
	ctx := context.Background()
	ca := pki.New(t, "ovn-ca")
	srvCert, srvKey := ca.Issue("ovn", pki.Leaf{EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPs: pki.Loopback})
	cliCert, cliKey := ca.Issue("proxmox-network-controller", pki.Leaf{EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, IPs: pki.Loopback})
	nb := ovngatewaytest.StartReal(t, ovngatewaytest.WithSSL(srvKey, srvCert, ca.PEM))
	for name, data := range map[string]map[string][]byte{
		"kube-ovn-tls": {ovngateway.SecretKeyCACert: ca.PEM, ovngateway.SecretKeyCert: cliCert, ovngateway.SecretKeyKey: cliKey},
		"decoy":        {"token": []byte("must-not-be-readable")},
	} {
		controllertest.Create(t, admin, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cozy-kubeovn", Name: name}, Data: data})
	}
	plain := rest.CopyConfig(cfg)
	plain.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount}
	checkSecretsClosed(t, plain)
	rec := &recorder{seen: map[grant]int{}}
	sa := rest.CopyConfig(plain)
	sa.Wrap(rec.wrap)

	o := controller.DefaultOptions()
	o.OVNNBAddress = nb.SSLEndpoint()
	o.MetricsBindAddress, o.ProbeBindAddress, o.WebhookPort = controllertest.FreeAddr(t), "0", 0
	o.LeaderElectionNS = "cozy-proxmox-network"
	o.SubnetPruneTimeout = time.Minute
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log, err := controller.NewLogger(logs, "debug", "json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := controller.New(sa, o, controller.Deps{Log: log, Registry: prometheus.NewRegistry(), Identity: "rbac-test"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Start(runCtx) }()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lifecycle(t, admin, cs, nb.Endpoint())
	t.Run("Metrics", func(t *testing.T) { checkMetricsServer(t, cs, o.MetricsBindAddress) })
	stop()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v after a graceful stop, want nil", err)
	}
	if denied := rec.deniedCalls(); len(denied) > 0 {
		t.Errorf("the API server refused the controller: %v", denied)
	}
	checkGrants(t, install, rec.used())
	for _, secret := range [][]byte{cliKey, []byte("PRIVATE KEY"), []byte("must-not-be-readable")} {
		if strings.Contains(logs.String(), string(secret)) {
			t.Errorf("the controller's log holds secret material %.20q", secret)
		}
	}
	if !strings.Contains(logs.String(), "leading: starting the reconcilers") {
		t.Errorf("the controller's log lacks its start lines; got %d bytes", len(logs.String()))
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lifecycle creates a network, waits for it to be Ready with its gateway,
// deletes it and waits for everything it held to be released.
func lifecycle(t *testing.T, admin client.Client, cs kubernetes.Interface, nbEndpoint string) {
	ctx := context.Background()
	k := controllertest.NewKubeOVN(nbEndpoint)
	defer k.Close()
	step := func() error { return k.React(ctx, admin) }
	name := controllertest.AddNetwork(t, admin, 1)
	controllertest.Eventually(t, 90*time.Second, step, func() (bool, string) { return controllertest.Ready(ctx, admin, name) })
	n := &v1alpha1.ProxmoxNetwork{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: controllertest.Tenant, Name: name}, n); err != nil {
		t.Fatal(err)
	}
	if n.Status.VLAN != 100 {
		t.Errorf("the first network got VLAN %d, want 100 (the zone's lowest)", n.Status.VLAN)
	}
	waitForEvents(t, cs, name, networkEvent(name, corev1.EventTypeNormal, network.EventVLANAllocated, "Allocate", "allocated VLAN 100 on zone "+controllertest.Zone))
	state := ovngatewaytest.Dump(t, ovngatewaytest.Connect(t, nbEndpoint))
	if got := state.Ports[ovngateway.RouterPortName(controllertest.VPC, name)].Group; got != "px-vpc-a-net-1" {
		t.Errorf("router port group = %q, want px-vpc-a-net-1", got)
	}
	controllertest.DeleteNetwork(t, admin, name)
	controllertest.Eventually(t, 90*time.Second, step, func() (bool, string) {
		err := admin.Get(ctx, client.ObjectKey{Namespace: controllertest.Tenant, Name: name}, &v1alpha1.ProxmoxNetwork{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("network still there (%v)", err)
		}
		err = admin.Get(ctx, client.ObjectKey{Name: name}, &kubeovnv1.Vlan{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Vlan %s still there (%v)", name, err)
	})
	if groups := ovngatewaytest.Dump(t, ovngatewaytest.Connect(t, nbEndpoint)).Groups; len(groups) != 0 {
		t.Errorf("HA_Chassis_Groups left after the network was released: %v", groups)
	}
	waitForEvents(t, cs, name,
		networkEvent(name, corev1.EventTypeNormal, network.EventGatewayReleased, "Release", fmt.Sprintf("released the HA chassis group of subnet %q in OVN NB", name)),
		networkEvent(name, corev1.EventTypeNormal, network.EventVLANReleased, "Release", "released VLAN 100 to zone "+controllertest.Zone))
}

// checkSecretsClosed: as the ServiceAccount, no Secret can be listed and
// no Secret but kube-ovn-tls can be read.
func checkSecretsClosed(t *testing.T, sa *rest.Config) {
	c, err := client.New(sa, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.List(ctx, &corev1.SecretList{}, client.InNamespace("cozy-kubeovn")); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets as the ServiceAccount: %v, want Forbidden", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "cozy-kubeovn", Name: "decoy"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("get another secret as the ServiceAccount: %v, want Forbidden", err)
	}
}

// checkGrants compares what the RBAC objects grant with what was used.
func checkGrants(t *testing.T, install []*unstructured.Unstructured, used sets.Set[grant]) {
	granted := grants(t, install)
	var missing, unused []string
	for u := range used {
		if !covered(granted, u) {
			missing = append(missing, u.String())
		}
	}
	for g := range granted {
		if !covered(used, g) {
			if _, ok := unusedOnPurpose[g.String()]; !ok {
				unused = append(unused, g.String())
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(unused)
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("calls the RBAC does not grant: -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string(nil), unused); diff != "" {
		t.Errorf("grants never used (least privilege; or list them in unusedOnPurpose with a reason): -want +got:\n%s", diff)
	}
}

// covered reports whether set holds g, a grant with no name covering any
// name.
func covered(set sets.Set[grant], g grant) bool {
	if set.Has(g) {
		return true
	}
	for s := range set {
		if s.Group == g.Group && s.Resource == g.Resource && s.Verb == g.Verb && s.Namespace == g.Namespace && (s.Name == "" || g.Name == "") {
			return true
		}
	}
	return false
}

// grants expands the ServiceAccount's roles in the manifests into grants.
func grants(t *testing.T, objs []*unstructured.Unstructured) sets.Set[grant] {
	out := sets.New[grant]()
	rules := map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "Role":
			var r rbacv1.Role
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				t.Fatal(err)
			}
			rules[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = r.Rules
		}
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		var b rbacv1.RoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			t.Fatal(err)
		}
		ns := ""
		if b.RoleRef.Kind == "Role" {
			ns = b.Namespace
		}
		for _, r := range rules[b.RoleRef.Kind+"/"+ns+"/"+b.RoleRef.Name] {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						names := r.ResourceNames
						if len(names) == 0 {
							names = []string{""}
						}
						for _, n := range names {
							out.Insert(grant{Group: g, Resource: res, Verb: v, Namespace: ns, Name: n})
						}
					}
				}
			}
		}
	}
	return out
}

// recorder notes every resource request the controller makes, and the
// ones the API server refused.
type recorder struct {
	mu     sync.Mutex
	seen   map[grant]int
	denied []string
}

var requestInfo = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

func (r *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		info, ierr := requestInfo.NewRequestInfo(req)
		if ierr != nil || !info.IsResourceRequest {
			return resp, err
		}
		res := info.Resource
		if info.Subresource != "" {
			res += "/" + info.Subresource
		}
		g := grant{Group: info.APIGroup, Resource: res, Verb: info.Verb, Namespace: info.Namespace, Name: info.Name}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen[g]++
		if err == nil && resp.StatusCode == http.StatusForbidden {
			r.denied = append(r.denied, g.String())
		}
		return resp, err
	})
}

// used returns the grants the requests needed: cluster-wide ones for
// cluster-scoped and all-namespace requests, namespaced ones for
// namespaced requests outside the ClusterRole's reach, names only where
// a Role names resources.
func (r *recorder) used() sets.Set[grant] {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := sets.New[grant]()
	for g := range r.seen {
		switch {
		case g.Group == "coordination.k8s.io", g.Resource == "secrets":
		default:
			g.Namespace = ""
		}
		if g.Resource != "secrets" || g.Verb != "get" {
			g.Name = ""
		}
		if g.Verb == "list" || g.Verb == "watch" || g.Verb == "create" {
			g.Name = ""
		}
		out.Insert(g)
	}
	return out
}

func (r *recorder) deniedCalls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.denied)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
