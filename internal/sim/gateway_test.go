package sim_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// memPorts is RouterPorts in memory: routers by name, each with its ports;
// it fails every call while down.
type memPorts struct {
	mu      sync.Mutex
	routers map[string][]string
	down    bool
}

var errDown = errors.New("NB down")

func (m *memPorts) RouterPorts(context.Context) (map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, errDown
	}
	out := map[string]string{}
	for r, ports := range m.routers {
		for _, p := range ports {
			out[p] = r
		}
	}
	return out, nil
}

func (m *memPorts) AddRouterPort(_ context.Context, router, port string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	m.routers[router] = append(m.routers[router], port)
	return nil
}

func (m *memPorts) DeleteRouterPort(_ context.Context, port string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	for r, ports := range m.routers {
		m.routers[r] = slices.DeleteFunc(ports, func(p string) bool { return p == port })
	}
	return nil
}

func subnet(name, vpc string) *kubeovnv1.Subnet {
	return &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.SubnetSpec{Vpc: vpc, CIDRBlock: "10.0.0.0/24"}}
}

// TestWorldRouterPortsStateMachine checks that after the world reacts, the
// NB holds exactly one router port "<vpc>-<subnet>", in the VPC's router,
// per existing Subnet of a VPC, whatever subnets come and go, and that an
// NB failure is an error of React, not a silent skip.
func TestWorldRouterPortsStateMachine(t *testing.T) {
	scheme := sim.Scheme()
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		nb := &memPorts{routers: map[string][]string{}}
		api := kube.NewClient(kube.ClientOptions{Scheme: scheme})
		w := &sim.World{PruneSubnets: true, NB: nb}
		model := map[string]string{} // subnet -> vpc
		all := []string{"s1", "s2", "s3", "s4"}
		vpcs := rapid.SampledFrom([]string{"", "vpc-a", "vpc-b"})
		rt.Repeat(map[string]func(*rapid.T){
			"create": func(rt *rapid.T) {
				absent := slices.DeleteFunc(slices.Clone(all), func(n string) bool { _, ok := model[n]; return ok })
				if len(absent) == 0 {
					return // every subnet exists; deletes make room again
				}
				name, vpc := rapid.SampledFrom(absent).Draw(rt, "subnet"), vpcs.Draw(rt, "vpc")
				if err := api.Create(ctx, subnet(name, vpc)); err != nil {
					rt.Fatal(err)
				}
				model[name] = vpc
			},
			"delete": func(rt *rapid.T) {
				if len(model) == 0 {
					return // nothing to delete yet
				}
				name := rapid.SampledFrom(slices.Sorted(maps.Keys(model))).Draw(rt, "subnet")
				if err := api.Delete(ctx, subnet(name, "")); err != nil {
					rt.Fatal(err)
				}
				delete(model, name)
			},
			"outage": func(rt *rapid.T) {
				nb.mu.Lock()
				nb.down = true
				nb.mu.Unlock()
				if _, err := w.React(ctx, api); !errors.Is(err, errDown) {
					rt.Fatalf("React with the NB down: %v, want %v", err, errDown)
				}
				nb.mu.Lock()
				nb.down = false
				nb.mu.Unlock()
			},
			"": func(rt *rapid.T) {
				if _, err := w.React(ctx, api); err != nil {
					rt.Fatal(err)
				}
				want := map[string]string{}
				for name, vpc := range model {
					if vpc != "" {
						want[ovngateway.RouterPortName(vpc, name)] = vpc
					}
				}
				got, _ := nb.RouterPorts(ctx)
				if diff := cmp.Diff(want, got); diff != "" {
					rt.Fatalf("router ports: -want +got:\n%s", diff)
				}
			},
		})
	})
}

// TestWorldWithoutNB checks that a world without an NB reacts as before:
// no router port is written anywhere and nothing fails.
func TestWorldWithoutNB(t *testing.T) {
	ctx := context.Background()
	h := sim.NewHarness(sim.Options{})
	mustCreate(t, h.Client(), subnet("s1", "vpc-a"))
	if h.World.NB != nil {
		t.Fatalf("World.NB = %v, want nil without Options.NB", h.World.NB)
	}
	if _, err := h.World.React(ctx, h.Client()); err != nil {
		t.Fatal(err)
	}
}

// TestOVNNBRouterPorts runs the world on libovsdb's in-memory NB: the
// router ports of a VPC's subnets appear in the VPC's Logical_Router and go
// with their Subnet; rows another client wrote are left alone.
func TestOVNNBRouterPorts(t *testing.T) {
	ctx := context.Background()
	srv := ovngatewaytest.StartInMemory(t)
	admin := ovngatewaytest.Connect(t, srv.Endpoint())
	if _, err := (ovngatewaytest.Admin{C: admin}).AddGroup(ctx, "foreign", nil); err != nil {
		t.Fatal(err)
	}
	h := sim.NewHarness(sim.Options{NB: sim.NewOVNNB(admin)})
	mustCreate(t, h.Client(), subnet("s1", "vpc-a"), subnet("s2", "vpc-a"), subnet("s3", "vpc-b"), subnet("plain", ""))
	if _, err := h.World.React(ctx, h.Client()); err != nil {
		t.Fatal(err)
	}
	rows := ovngatewaytest.ReadRows(t, admin)
	got := map[string][]string{}
	names := map[string]string{}
	for _, p := range rows.Ports {
		names[p.UUID] = p.Name
	}
	for _, r := range rows.Routers {
		for _, u := range r.Ports {
			got[r.Name] = append(got[r.Name], names[u])
		}
		slices.Sort(got[r.Name])
	}
	want := map[string][]string{"vpc-a": {"vpc-a-s1", "vpc-a-s2"}, "vpc-b": {"vpc-b-s3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("routers and their ports: -want +got:\n%s", diff)
	}
	if err := h.Client().Delete(ctx, subnet("s1", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.World.React(ctx, h.Client()); err != nil {
		t.Fatal(err)
	}
	ports, err := sim.NewOVNNB(admin).RouterPorts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"vpc-a-s2": "vpc-a", "vpc-b-s3": "vpc-b"}, ports); diff != "" {
		t.Errorf("after deleting s1: -want +got:\n%s", diff)
	}
	if st := ovngatewaytest.ReadRows(t, admin).State(); len(st.Groups) != 1 {
		t.Errorf("the foreign group was touched: %+v", st.Groups)
	}
}

// chassisGateway is a network.Gateway that reports, in GatewayReady's
// message, the chassis of the Nodes ready on the network's provider
// network, read from the API when asked.
type chassisGateway struct{ nodes client.Reader }

func (g chassisGateway) Ensure(ctx context.Context, n network.NetworkInfo) (network.GatewayStatus, error) {
	var list corev1.NodeList
	if err := g.nodes.List(ctx, &list); err != nil {
		return network.GatewayStatus{}, err
	}
	ptrs := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		ptrs[i] = &list.Items[i]
	}
	var names []string
	for _, c := range kubegateway.Candidates(n.ProviderNetwork, ptrs) {
		names = append(names, c.Chassis)
	}
	return network.GatewayStatus{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonChassisAssigned,
		Message: strings.Join(names, ","), Chassis: len(names), RequeueAfter: ovngateway.ResyncPeriod}, nil
}

func (chassisGateway) Release(context.Context, network.NetworkInfo) (bool, error) { return true, nil }

// TestNodeChangeReconcilesNetworks checks that, with a gateway, a Node that
// joins or leaves a provider network's trunk reaches the gateway of every
// network of that provider network at the next Converge, without waiting
// for the resync; a Node of another provider network changes nothing.
func TestNodeChangeReconcilesNetworks(t *testing.T) {
	ctx := context.Background()
	var h *sim.Harness
	h = sim.NewHarness(sim.Options{Gateway: func() network.Gateway { return chassisGateway{h.Store()} }})
	c := h.Client()
	mustCreate(t, c, sim.ProviderNetwork("pxtenant", true), sim.ProviderNetwork("other", true),
		sim.Zone("zone-a", "vmbr1", "pxtenant", "100-101"), sim.Namespace("tenant-a", nil),
		sim.TrunkNode("node-1", "pxtenant", "ch-1"), sim.TrunkNode("node-2", "pxtenant", "ch-2"))
	objs, err := sim.Network("tenant-a", "subnet-a", "zone-a", "vpc-a", "10.0.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, objs...)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"start", func() error { return nil }, "ch-1,ch-2"},
		{"join", func() error { return c.Create(ctx, sim.TrunkNode("node-3", "pxtenant", "ch-3")) }, "ch-1,ch-2,ch-3"},
		{"unlabel", func() error {
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: "node-1"}, n); err != nil {
				return err
			}
			delete(n.Labels, kubegateway.ReadyLabel("pxtenant"))
			return c.Update(ctx, n)
		}, "ch-2,ch-3"},
		{"delete", func() error { return c.Delete(ctx, sim.TrunkNode("node-2", "", "")) }, "ch-3"},
		{"otherProvider", func() error { return c.Create(ctx, sim.TrunkNode("node-4", "other", "ch-4")) }, "ch-3"},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if _, err := h.Converge(ctx); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		var n v1alpha1.ProxmoxNetwork
		if err := h.Store().Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "subnet-a"}, &n); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionGatewayReady)
		if cond == nil || cond.Message != st.want {
			t.Errorf("%s: GatewayReady %+v, want the message %q", st.name, cond, st.want)
		}
	}
}

// TestTrunkNode checks the labels and annotation Candidates looks for.
func TestTrunkNode(t *testing.T) {
	n := sim.TrunkNode("node-1", "pxtenant", "ch-1")
	got := kubegateway.Candidates("pxtenant", []*corev1.Node{n})
	if diff := cmp.Diff([]ovngateway.Candidate{{Node: "node-1", Chassis: "ch-1"}}, got); diff != "" {
		t.Errorf("Candidates: -want +got:\n%s", diff)
	}
	if got := kubegateway.Candidates("other", []*corev1.Node{n}); len(got) != 0 {
		t.Errorf("a trunk node of pxtenant is a candidate of another provider network: %v", got)
	}
}
