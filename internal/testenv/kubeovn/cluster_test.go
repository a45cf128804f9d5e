package kubeovn_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/kubeovn"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

// envtest's CRD installer logs through controller-runtime.
func init() { ctrllog.SetLogger(logr.Discard()) }

// providerNetwork is the zone's Kube-OVN ProviderNetwork, as in the specs.
const providerNetwork = "pxtenant"

// nodes are three trunk nodes, as a Cozystack cluster with a Proxmox
// zone has; the addresses are documentation addresses that nothing is
// sent to (they are only rows of the southbound database).
var nodes = []kubeovn.Node{
	{Name: "node-1", IP: "192.0.2.11", Chassis: "chassis-node-1", ProviderNetworks: []string{providerNetwork}},
	{Name: "node-2", IP: "192.0.2.12", Chassis: "chassis-node-2", ProviderNetworks: []string{providerNetwork}},
	{Name: "node-3", IP: "192.0.2.13", Chassis: "chassis-node-3", ProviderNetworks: []string{providerNetwork}},
}

// cluster is Kube-OVN running against a test API server with the nodes,
// the zone's ProviderNetwork, an NB client that watches everything and our
// gateway client.
type cluster struct {
	t   *testing.T
	cfg *rest.Config
	k   *kubeovn.KubeOVN
	c   ctrlclient.Client
	nb  client.Client
	gw  *ovngateway.Client
	ctx context.Context
}

func scheme() *runtime.Scheme {
	s := kube.Scheme()
	utilruntime.Must(kubeovnv1.AddToScheme(s))
	return s
}

// addNodesAndDial adds the nodes as the kubelet and kube-ovn-cni would,
// then connects our gateway client to Kube-OVN's northbound database.
func (cl *cluster) addNodesAndDial(nodes []kubeovn.Node) {
	cl.t.Helper()
	for _, n := range nodes {
		if err := cl.k.AddNode(cl.ctx, cl.c, n); err != nil {
			cl.t.Fatal(err)
		}
	}
	gw, err := ovngateway.Dial(cl.ctx, ovngateway.Config{Address: cl.k.NB.Addr})
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.t.Cleanup(gw.Close)
	cl.gw = gw
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	return startClusterOn(t, func(t testing.TB) (*rest.Config, ctrlclient.Client) {
		return testenv.StartAPIServer(t, testenv.APIServerOptions{Scheme: scheme()})
	})
}

// startClusterOn is startCluster on the API server start returns.
func startClusterOn(t *testing.T, start func(testing.TB) (*rest.Config, ctrlclient.Client)) *cluster {
	t.Helper()
	cfg, c := start(t)
	k := kubeovn.StartT(t, cfg, kubeovn.Options{Webhook: true})
	ctx := context.Background()
	cl := &cluster{t: t, k: k, c: c, cfg: cfg, ctx: ctx, nb: ovngatewaytest.Connect(t, k.NB.Unix)}
	if err := c.Create(ctx, &kubeovnv1.ProviderNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: providerNetwork},
		Spec:       kubeovnv1.ProviderNetworkSpec{DefaultInterface: "eth1"},
	}); err != nil {
		t.Fatal(err)
	}
	cl.addNodesAndDial(nodes)
	// kube-ovn-controller gives every node a port on the join switch.
	cl.eventually(time.Minute, "every node's join port", func() (bool, string) {
		var missing []string
		for _, n := range nodes {
			if _, ok := cl.switchPort("node-" + n.Name); !ok {
				missing = append(missing, n.Name)
			}
		}
		return len(missing) == 0, fmt.Sprintf("no join port for %v", missing)
	})
	return cl
}

// apply creates the namespace, the Kube-OVN Vlan the controller gives
// each Proxmox-backed subnet (vids from firstVID on) and the rendered Vpc
// and Subnets, and returns the Proxmox-backed subnets. With firstVID 0 it
// creates no Vlan and every rendered object but the attachments, for our
// controller to allocate the Vlans.
func (cl *cluster) apply(specYAML string, firstVID int) []*kubeovnv1.Subnet {
	cl.t.Helper()
	spec, err := vpcrender.ParseSpec([]byte(specYAML))
	if err != nil {
		cl.t.Fatal(err)
	}
	r, err := vpcrender.Render(spec)
	if err != nil {
		cl.t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace}}
	if err := cl.c.Create(cl.ctx, ns); ctrlclient.IgnoreAlreadyExists(err) != nil {
		cl.t.Fatal(err)
	}
	objs, err := r.Unstructured()
	if err != nil {
		cl.t.Fatal(err)
	}
	var proxmox []*kubeovnv1.Subnet
	vid := firstVID
	for _, o := range r.Objects {
		if s, ok := o.(*kubeovnv1.Subnet); ok && s.Spec.Vlan != "" {
			if firstVID != 0 {
				cl.create(&kubeovnv1.Vlan{
					ObjectMeta: metav1.ObjectMeta{Name: s.Spec.Vlan},
					Spec:       kubeovnv1.VlanSpec{ID: vid, Provider: providerNetwork},
				})
				vid++
			}
			proxmox = append(proxmox, s)
		}
	}
	for _, u := range objs {
		// Without Vlans our controller runs: it allocates them from the
		// ProxmoxNetworks, next to the pools. Multus' attachments are for
		// pods, which nothing here runs.
		if u.GetAPIVersion() == kubeovnv1.GroupVersion.String() || (firstVID == 0 && u.GetKind() != "NetworkAttachmentDefinition") {
			cl.create(u)
		}
	}
	return proxmox
}

func (cl *cluster) create(o ctrlclient.Object) {
	cl.t.Helper()
	if err := cl.c.Create(cl.ctx, o); err != nil {
		cl.t.Fatalf("cannot create %T %s: %v", o, o.GetName(), err)
	}
}

// gateway is what our controller asks ovngateway for: the trunk nodes of
// the zone, from the Nodes, ranked for the subnet's VPC.
func (cl *cluster) gateway(s *kubeovnv1.Subnet) ovngateway.Gateway {
	cl.t.Helper()
	var list corev1.NodeList
	if err := cl.c.List(cl.ctx, &list); err != nil {
		cl.t.Fatal(err)
	}
	n := ovngateway.Network{Namespace: s.Labels[vpcrender.LabelTenantName], Name: s.Name, RouterPort: ovngateway.RouterPortName(s.Spec.Vpc, s.Name)}
	ptrs := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		ptrs[i] = &list.Items[i]
	}
	gw, err := ovngateway.NewGateway(n, s.Spec.Vpc, providerNetwork, kubegateway.Candidates(providerNetwork, ptrs))
	if err != nil {
		cl.t.Fatal(err)
	}
	return gw
}

// eventually polls cond every 100 ms until it holds, failing the test with
// its last message after timeout.
func (cl *cluster) eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	cl.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			cl.t.Fatalf("%s: not within %s: %s\nkube-ovn-controller:\n%s", what, timeout, msg, cl.k.Controller().Tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// named returns the row of table T whose name is name, read from the NB.
func named[T any, PT interface {
	*T
	model.Model
}](cl *cluster, name string, nameOf func(*T) string) (T, bool) {
	for _, r := range ovngatewaytest.Select[T, PT](cl.t, cl.nb) {
		if nameOf(&r) == name {
			return r, true
		}
	}
	var zero T
	return zero, false
}

func (cl *cluster) routerPort(name string) (nbmodel.LogicalRouterPort, bool) {
	return named(cl, name, func(r *nbmodel.LogicalRouterPort) string { return r.Name })
}

func (cl *cluster) switchPort(name string) (nbmodel.LogicalSwitchPort, bool) {
	return named(cl, name, func(r *nbmodel.LogicalSwitchPort) string { return r.Name })
}

func (cl *cluster) router(name string) (nbmodel.LogicalRouter, bool) {
	return named(cl, name, func(r *nbmodel.LogicalRouter) string { return r.Name })
}

func (cl *cluster) logicalSwitch(name string) (nbmodel.LogicalSwitch, bool) {
	return named(cl, name, func(r *nbmodel.LogicalSwitch) string { return r.Name })
}

// portWatch records every change the NB makes to a set of router ports
// and to the HA_Chassis_Groups, from the monitor of an NB client.
type portWatch struct {
	mu     sync.Mutex
	ports  []string
	events []string
}

func watchPorts(nb client.Client, ports ...string) *portWatch {
	w := &portWatch{ports: ports}
	nb.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		UpdateFunc: func(table string, old, new model.Model) { w.record("update", table, old, new) },
		DeleteFunc: func(table string, m model.Model) { w.record("delete", table, m, nil) },
		AddFunc:    func(table string, m model.Model) { w.record("insert", table, nil, m) },
	})
	return w
}

func (w *portWatch) record(op, table string, old, new model.Model) {
	var line string
	switch table {
	case "Logical_Router_Port":
		p := portOf(old, new)
		if !slices.Contains(w.ports, p.Name) {
			return
		}
		line = fmt.Sprintf("%s %s %s%s", op, table, p.Name, portDiff(old, new))
	case "HA_Chassis_Group":
		g := groupOf(old, new)
		line = fmt.Sprintf("%s %s %s", op, table, g.Name)
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, line)
}

func portOf(old, new model.Model) *nbmodel.LogicalRouterPort {
	if new != nil {
		return new.(*nbmodel.LogicalRouterPort)
	}
	return old.(*nbmodel.LogicalRouterPort)
}

func groupOf(old, new model.Model) *nbmodel.HAChassisGroup {
	if new != nil {
		return new.(*nbmodel.HAChassisGroup)
	}
	return old.(*nbmodel.HAChassisGroup)
}

// portDiff names the columns an update changed.
func portDiff(old, new model.Model) string {
	if old == nil || new == nil {
		return ""
	}
	o, n := old.(*nbmodel.LogicalRouterPort), new.(*nbmodel.LogicalRouterPort)
	var cols []string
	if ptrString(o.HaChassisGroup) != ptrString(n.HaChassisGroup) {
		cols = append(cols, fmt.Sprintf("ha_chassis_group %q->%q", ptrString(o.HaChassisGroup), ptrString(n.HaChassisGroup)))
	}
	if !slices.Equal(o.Networks, n.Networks) {
		cols = append(cols, fmt.Sprintf("networks %v->%v", o.Networks, n.Networks))
	}
	if o.MAC != n.MAC {
		cols = append(cols, "mac")
	}
	if fmt.Sprint(o.Options) != fmt.Sprint(n.Options) {
		cols = append(cols, fmt.Sprintf("options %v->%v", o.Options, n.Options))
	}
	if fmt.Sprint(o.ExternalIDs) != fmt.Sprint(n.ExternalIDs) {
		cols = append(cols, fmt.Sprintf("external_ids %v->%v", o.ExternalIDs, n.ExternalIDs))
	}
	if len(cols) == 0 {
		return " (no column of interest)"
	}
	return ": " + strings.Join(cols, ", ")
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// quiet waits until the monitor has delivered nothing for a second (the
// cache delivers events asynchronously) and returns what it recorded
// since the last take.
func (w *portWatch) quiet() []string {
	n := -1
	for {
		w.mu.Lock()
		cur := len(w.events)
		w.mu.Unlock()
		if cur == n {
			return w.take()
		}
		n = cur
		time.Sleep(time.Second)
	}
}

// drain drops what quiet returns.
func (w *portWatch) drain() { w.quiet() }

// take returns the events recorded since the last take.
func (w *portWatch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.events
	w.events = nil
	return out
}
