package nodeagent_test

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/nodeagent"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/talosboot"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// networkConfig is shaped as capmox's network-config template writes it.
const networkConfig = `network:
  version: 2
  renderer: networkd
  ethernets:
    eth1:
      addresses: ["10.20.0.31/24"]
    eth0:
      match: {macaddress: "BC:24:11:00:00:01"}
      addresses: ["10.10.0.31/24", "fd00::31/64"]
`

// TestRegister: a booted VM registers its Node at the endpoint its Talos
// configuration names, Ready, with its static addresses and its SMBIOS
// UUID as systemUUID, and no providerID (the CCM sets it); registering
// again keeps one Node. The control: a
// configuration naming another endpoint registers nothing on this server.
func TestRegister(t *testing.T) {
	cfg, c := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	endpoint, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	creds := rest.CopyConfig(cfg)
	creds.Host = "https://192.0.2.1:6443" // replaced by the boot's endpoint
	b := &talosboot.Boot{Endpoint: endpoint, NetworkConfig: []byte(networkConfig),
		Meta: talosboot.Meta{InstanceID: "4a1d3c56-8a0e-4bd3-9c45-0b6f2a1e9d77", LocalHostname: "tenant-a-md0-x7k2p"}}
	ctx := context.Background()
	for range 2 {
		if _, err := nodeagent.Register(ctx, b, creds); err != nil {
			t.Fatal(err)
		}
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 {
		t.Fatalf("%d nodes", len(nodes.Items))
	}
	n := nodes.Items[0]
	var addrs []string
	for _, a := range n.Status.Addresses {
		addrs = append(addrs, string(a.Type)+"="+a.Address)
	}
	if n.Name != "tenant-a-md0-x7k2p" || n.Spec.ProviderID != "" || n.Status.NodeInfo.SystemUUID != "4a1d3c56-8a0e-4bd3-9c45-0b6f2a1e9d77" ||
		!conditionsAre(n.Status.Conditions, "MemoryPressure=False", "DiskPressure=False", "PIDPressure=False", "Ready=True") ||
		!slices.Equal(addrs, []string{"Hostname=tenant-a-md0-x7k2p", "InternalIP=10.10.0.31", "InternalIP=fd00::31", "InternalIP=10.20.0.31"}) {
		t.Errorf("node %s %s %v %v", n.Name, n.Spec.ProviderID, n.Status.Conditions, addrs)
	}
	other := *b
	other.Meta.LocalHostname = "elsewhere"
	other.Endpoint = &url.URL{Scheme: "https", Host: "127.0.0.1:1"}
	if _, err := nodeagent.Register(ctx, &other, creds); err == nil {
		t.Error("a configuration naming another endpoint registered")
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "elsewhere"}, &corev1.Node{}); err == nil {
		t.Error("the node of another endpoint is on this server")
	}
	if _, err := nodeagent.Register(ctx, &talosboot.Boot{Endpoint: endpoint}, creds); err == nil {
		t.Error("a boot without identity registered")
	}
}

func TestAddresses(t *testing.T) {
	got := nodeagent.Addresses([]byte(networkConfig))
	want := []netip.Addr{netip.MustParseAddr("10.10.0.31"), netip.MustParseAddr("fd00::31"), netip.MustParseAddr("10.20.0.31")}
	if !slices.Equal(got, want) {
		t.Errorf("Addresses = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "[", "network: {ethernets: 3}", "ethernets: {eth0: {addresses: [10.0.0.1/24]}}"} {
		if got := nodeagent.Addresses([]byte(bad)); got != nil {
			t.Errorf("Addresses(%q) = %v", bad, got)
		}
	}
}

// TestResolve: an endpoint host is resolved as Talos resolves it from
// /etc/hosts: an address stands for itself, a name takes the address of
// the extraHostEntries entry whose aliases hold it, and a name no entry
// holds (or a boot without configuration) is ErrUnresolved, since the
// agent asks no DNS server.
func TestResolve(t *testing.T) {
	cfg, err := configloader.NewFromBytes([]byte(`version: v1alpha1
machine:
  type: worker
  network:
    extraHostEntries:
      - ip: 192.0.2.9
        aliases: [other.example]
      - ip: 127.77.1.2
        aliases: [kube.example, demo.tenant-demo.svc]
cluster:
  controlPlane:
    endpoint: https://demo.tenant-demo.svc:6443
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		endpoint string
		noConfig bool
		want     string
	}{
		{endpoint: "https://demo.tenant-demo.svc:6443", want: "127.77.1.2"},
		{endpoint: "https://other.example:6443", want: "192.0.2.9"},
		{endpoint: "https://10.0.0.5:6443", want: "10.0.0.5"},
		{endpoint: "https://[fd00::5]:6443", want: "fd00::5"},
		{endpoint: "https://demo.tenant-demo.svc.cluster.local:6443"},
		{endpoint: "https://demo.tenant-demo.svc:6443", noConfig: true},
	} {
		u, err := url.Parse(tc.endpoint)
		if err != nil {
			t.Fatal(err)
		}
		b := &talosboot.Boot{Endpoint: u, Config: cfg}
		if tc.noConfig {
			b.Config = nil
		}
		got, err := nodeagent.Resolve(b)
		switch {
		case tc.want == "" && !errors.Is(err, nodeagent.ErrUnresolved):
			t.Errorf("%s (config %v): got %v, %v; want ErrUnresolved", tc.endpoint, !tc.noConfig, got, err)
		case tc.want != "" && (err != nil || got.String() != tc.want):
			t.Errorf("%s: got %v, %v; want %s", tc.endpoint, got, err, tc.want)
		}
	}
}

// TestPostStatus: a heartbeat moves the Node's Ready lastHeartbeatTime on
// and keeps its lastTransitionTime while it stays True; after the node
// lifecycle controller set it Unknown, a heartbeat makes it True again
// with a new transition. A deleted Node is not brought back:
// ErrNodeGone.
func TestPostStatus(t *testing.T) {
	cfg, c := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	ctx := context.Background()
	a := newAgent(t, cfg, cfg)
	n, err := a.Register(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ready := func() corev1.NodeCondition {
		t.Helper()
		var got corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: a.Name()}, &got); err != nil {
			t.Fatal(err)
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond
			}
		}
		t.Fatalf("node %s has no Ready condition: %v", a.Name(), got.Status.Conditions)
		return corev1.NodeCondition{}
	}
	first := ready()
	time.Sleep(1100 * time.Millisecond) // the API keeps whole seconds
	if err := a.PostStatus(ctx); err != nil {
		t.Fatal(err)
	}
	beat := ready()
	if !beat.LastHeartbeatTime.After(first.LastHeartbeatTime.Time) || !beat.LastTransitionTime.Equal(&first.LastTransitionTime) || beat.Status != corev1.ConditionTrue {
		t.Errorf("after a heartbeat: %+v, before: %+v", beat, first)
	}
	// What the node lifecycle controller writes when the heartbeats stop.
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastHeartbeatTime: beat.LastHeartbeatTime, LastTransitionTime: beat.LastTransitionTime}}
	var cur corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: a.Name()}, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.Conditions = n.Status.Conditions
	if err := c.Status().Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := a.PostStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if back := ready(); back.Status != corev1.ConditionTrue || back.Reason != "KubeletReady" || !back.LastTransitionTime.After(beat.LastTransitionTime.Time) {
		t.Errorf("a heartbeat after Unknown: %+v", back)
	}
	if err := c.Delete(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	if err := a.PostStatus(ctx); !errors.Is(err, nodeagent.ErrNodeGone) {
		t.Errorf("a heartbeat for a deleted node: %v, want ErrNodeGone", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: a.Name()}, &corev1.Node{}); err == nil {
		t.Error("a heartbeat brought back a deleted node")
	}
}

// TestRegisterExternalCloudProvider: a configuration whose kubelet runs
// with cloud-provider: external (what the render writes) registers its
// Node as such a kubelet does, for the CCM to initialise: the
// uninitialized taint, the provided node IPs (the first static address of
// each family, as a dual-stack kubelet's --node-ip), no providerID; a
// configuration without it gets neither.
func TestRegisterExternalCloudProvider(t *testing.T) {
	cfg, c := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	endpoint, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, kubelet string
		external      bool
	}{{"external", "\n  kubelet:\n    extraArgs:\n      cloud-provider: external", true}, {"none", "", false}} {
		tc := tc
		talos, err := configloader.NewFromBytes([]byte("version: v1alpha1\nmachine:\n  type: worker" + tc.kubelet +
			"\ncluster:\n  controlPlane:\n    endpoint: " + cfg.Host + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		b := &talosboot.Boot{Endpoint: endpoint, Config: talos, NetworkConfig: []byte(networkConfig),
			Meta: talosboot.Meta{InstanceID: "4a1d3c56-8a0e-4bd3-9c45-0b6f2a1e9d77", LocalHostname: "node-" + tc.name}}
		n, err := nodeagent.Register(ctx, b, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: n.Name}, &got); err != nil {
			t.Fatal(err)
		}
		tainted := slices.ContainsFunc(got.Spec.Taints, func(tn corev1.Taint) bool {
			return tn.Key == nodeagent.TaintUninitialized && tn.Effect == corev1.TaintEffectNoSchedule
		})
		ip := got.Annotations[nodeagent.AnnotationProvidedIP]
		if tainted != tc.external || (ip == "10.10.0.31,fd00::31") != tc.external || got.Spec.ProviderID != "" ||
			got.Annotations[nodeagent.AnnotationControllerAttach] != "true" {
			t.Errorf("%s: taints %v, annotations %v, providerID %q", tc.name, got.Spec.Taints, got.Annotations, got.Spec.ProviderID)
		}
	}
}

// conditionsAre says whether conds are want, each written type=status, in
// order.
func conditionsAre(conds []corev1.NodeCondition, want ...string) bool {
	got := make([]string, 0, len(conds))
	for _, c := range conds {
		got = append(got, string(c.Type)+"="+string(c.Status))
	}
	return slices.Equal(got, want)
}

// newAgent returns the agent of a VM booted with networkConfig whose
// Talos configuration names the API server of cfg, reaching it with creds.
func newAgent(t *testing.T, cfg, creds *rest.Config) *nodeagent.Agent {
	t.Helper()
	endpoint, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	b := &talosboot.Boot{Endpoint: endpoint, NetworkConfig: []byte(networkConfig),
		Meta: talosboot.Meta{InstanceID: "4a1d3c56-8a0e-4bd3-9c45-0b6f2a1e9d77", LocalHostname: "tenant-a-md0-x7k2p"}}
	a, err := nodeagent.New(b, creds)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// requestCounter counts the requests a client sends, by method and path.
type requestCounter struct {
	mu   sync.Mutex
	seen []string
}

func (rc *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		rc.mu.Lock()
		rc.seen = append(rc.seen, r.Method+" "+r.URL.Path)
		rc.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

// take returns the requests counted since the last take.
func (rc *requestCounter) take() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.seen
	rc.seen = nil
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSyncPodsCSI: the node plugin's driver is added to the Node's
// CSINode once the Node has its topology labels, with the labels as
// topology keys and 24 volumes; a Pod without claims on the Node runs,
// Ready. Once registered, a round with nothing to do reads the Node and
// lists its Pods and sends nothing else, as a kubelet registers its
// plugin once; a Node made again (another UID) gets the driver again.
func TestSyncPodsCSI(t *testing.T) {
	cfg, c := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	counted := rest.CopyConfig(cfg)
	rc := &requestCounter{}
	counted.Wrap(rc.wrap)
	ctx := context.Background()
	a := newAgent(t, cfg, counted)
	if _, err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	if d := csiDrivers(t, cs, a.Name()); len(d) != 0 {
		t.Errorf("the driver is registered before the Node has its topology labels: %+v", d)
	}
	label := func() {
		t.Helper()
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: a.Name()}, &n); err != nil {
			t.Fatal(err)
		}
		n.Labels = map[string]string{corev1.LabelTopologyRegion: "lab", corev1.LabelTopologyZone: "pve1"}
		if err := c.Update(ctx, &n); err != nil {
			t.Fatal(err)
		}
	}
	label()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: a.Name(), Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := a.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	d := csiDrivers(t, cs, a.Name())
	if len(d) != 1 || d[0].Name != nodeagent.CSIDriver || d[0].NodeID != a.Name() || d[0].Allocatable == nil || *d[0].Allocatable.Count != 24 ||
		!slices.Equal(d[0].TopologyKeys, []string{corev1.LabelTopologyRegion, corev1.LabelTopologyZone}) {
		t.Errorf("the CSINode's drivers: %+v", d)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodRunning || !podReady(pod) {
		t.Errorf("the Pod without claims: %s, conditions %+v", pod.Status.Phase, pod.Status.Conditions)
	}
	rc.take()
	if err := a.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := rc.take(), []string{"GET /api/v1/nodes/" + a.Name(), "GET /api/v1/pods"}; !slices.Equal(got, want) {
		t.Errorf("a round with nothing to do sent %q, want %q", got, want)
	}
	// The Node made again: its CSINode (garbage collected with the Node
	// it was owned by) is made again with the driver.
	if err := cs.StorageV1().CSINodes().Delete(ctx, a.Name(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.Name()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}
	label()
	if err := a.SyncPods(ctx); err != nil {
		t.Fatal(err)
	}
	if d := csiDrivers(t, cs, a.Name()); len(d) != 1 || d[0].Name != nodeagent.CSIDriver {
		t.Errorf("the Node made again: the CSINode's drivers %+v", d)
	}
}

// csiDrivers are the drivers of the CSINode of node (none when it has no CSINode).
func csiDrivers(t *testing.T, cs kubernetes.Interface, node string) []storagev1.CSINodeDriver {
	t.Helper()
	cn, err := cs.StorageV1().CSINodes().Get(context.Background(), node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return cn.Spec.Drivers
}

func podReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}
