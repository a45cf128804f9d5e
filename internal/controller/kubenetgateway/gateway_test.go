package kubenetgateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

const provider = "pxtenant"

func scheme() *runtime.Scheme {
	s := kube.Scheme()
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

// node is a Node ready on the provider network with chassis "ch-<name>",
// unless ready is false.
func node(name string, ready bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{kubegateway.ChassisAnnotation: "ch-" + name}}}
	if ready {
		n.Labels = map[string]string{kubegateway.ReadyLabel(provider): "true"}
	}
	return n
}

func info(name string) network.NetworkInfo {
	return network.NetworkInfo{Namespace: "tenant-a", Name: name, Zone: "z", ProviderNetwork: provider, VPC: "vpc-a", Subnet: name, VLAN: 100}
}

func withMTU(n network.NetworkInfo, mtu int) network.NetworkInfo {
	n.GatewayMTU = mtu
	return n
}

// start runs an in-memory NB, a gateway client on it and a fake API
// holding objs.
func start(t *testing.T, objs ...client.Object) (*ovngatewaytest.InMemory, *ovngateway.Client, client.WithWatch) {
	t.Helper()
	s := ovngatewaytest.StartInMemory(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gc, err := ovngateway.Dial(ctx, ovngateway.Config{Address: s.Endpoint(), MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(gc.Close)
	k := kube.NewClient(kube.ClientOptions{Scheme: scheme(), Objects: objs, WithStatus: []client.Object{&v1alpha1.ProxmoxNetwork{}}})
	return s, gc, k
}

// ensureCase is one Ensure case: the Nodes, the router ports Kube-OVN
// made, the network, and what Ensure must report and leave in the NB.
type ensureCase struct {
	reason string
	nodes  []client.Object
	ports  []string
	n      network.NetworkInfo
	want   ensureWant
}

type ensureWant struct {
	status  network.GatewayStatus
	err     bool
	state   ovngatewaytest.State
	checked bool
}

func ensureCases(t *testing.T) map[string]ensureCase {
	group := func(name string, chassis ...ovngatewaytest.Chassis) ovngatewaytest.Group {
		return ovngatewaytest.Group{ExternalIDs: map[string]string{ovngateway.OwnerKey: ovngateway.OwnerValue, ovngateway.NetworkKey: "tenant-a/" + name}, Chassis: chassis}
	}
	return map[string]ensureCase{
		"ChassisAssigned": {
			reason: "The router port of a network with two ready trunk nodes gets a group of both, priorities from the VPC's rendezvous order.",
			nodes:  []client.Object{node("n1", true), node("n2", true), node("n3", false)},
			ports:  []string{"vpc-a-net1"},
			n:      info("net1"),
			want: ensureWant{
				status: network.GatewayStatus{
					Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonChassisAssigned,
					Chassis: 2, Primary: rank(t, "n1", "n2")[0].Name, RequeueAfter: ovngateway.ResyncPeriod,
				},
				state: ovngatewaytest.State{
					Groups: map[string]ovngatewaytest.Group{"px-vpc-a-net1": group("net1", rank(t, "n1", "n2")...)},
					Ports:  map[string]ovngatewaytest.Port{"vpc-a-net1": {Group: "px-vpc-a-net1"}},
				},
				checked: true,
			},
		},
		"GatewayMTU": {
			reason: "The zone's gateway MTU becomes the port's options:gateway_mtu, marked with the network.",
			nodes:  []client.Object{node("n1", true)},
			ports:  []string{"vpc-a-net1"},
			n:      withMTU(info("net1"), 1400),
			want: ensureWant{
				status: network.GatewayStatus{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonChassisAssigned, Chassis: 1, Primary: "ch-n1", RequeueAfter: ovngateway.ResyncPeriod},
				state: ovngatewaytest.State{
					Groups: map[string]ovngatewaytest.Group{"px-vpc-a-net1": group("net1", rank(t, "n1")...)},
					Ports: map[string]ovngatewaytest.Port{"vpc-a-net1": {Group: "px-vpc-a-net1",
						Options:     map[string]string{ovngateway.GatewayMTUOption: "1400"},
						ExternalIDs: map[string]string{ovngateway.GatewayMTUOwnerKey: "tenant-a/net1"}}},
				},
				checked: true,
			},
		},
		"RouterPortMissing": {
			reason: "Before Kube-OVN creates the router port nothing is written and the network is asked again after RetryAfter.",
			nodes:  []client.Object{node("n1", true)},
			n:      info("net1"),
			want: ensureWant{
				status:  network.GatewayStatus{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRouterPortMissing, RequeueAfter: ovngateway.RetryAfter},
				state:   ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{}, Ports: map[string]ovngatewaytest.Port{}},
				checked: true,
			},
		},
		"NoTrunkNodes": {
			reason: "Without a Node ready on the provider network no group is created.",
			nodes:  []client.Object{node("n1", false)},
			ports:  []string{"vpc-a-net1"},
			n:      info("net1"),
			want: ensureWant{
				status:  network.GatewayStatus{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoTrunkNodes, RequeueAfter: ovngateway.ResyncPeriod},
				state:   ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{}, Ports: map[string]ovngatewaytest.Port{"vpc-a-net1": {}}},
				checked: true,
			},
		},
		"WaitingForVLAN": {
			reason: "A network without a VLAN is not looked up in the NB.",
			n:      network.NetworkInfo{Namespace: "tenant-a", Name: "net1", VPC: "vpc-a", Subnet: "net1"},
			want:   ensureWant{status: network.GatewayStatus{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonWaitingForVLAN, RequeueAfter: ovngateway.ResyncPeriod}},
		},
		"NoVPC": {
			reason: "A subnet without spec.vpc names no router port.",
			n:      network.NetworkInfo{Namespace: "tenant-a", Name: "net1", Subnet: "net1", VLAN: 100},
			want:   ensureWant{status: network.GatewayStatus{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSubnetUnavailable, RequeueAfter: ovngateway.ResyncPeriod}},
		},
	}
}

func TestEnsure(t *testing.T) {
	cases := ensureCases(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, gc, k := start(t, tc.nodes...)
			admin := ovngatewaytest.Connect(t, s.Endpoint())
			for _, p := range tc.ports {
				ovngatewaytest.AddRouterPort(t, admin, "vpc-a", p)
			}
			gw, err := kubenetgateway.New(gc, k)
			if err != nil {
				t.Fatal(err)
			}
			got, err := gw.Ensure(context.Background(), tc.n)
			if (err != nil) != tc.want.err {
				t.Fatalf("%s\nEnsure(...): error %v, want error %v", tc.reason, err, tc.want.err)
			}
			got.Message = ""
			if diff := cmp.Diff(tc.want.status, got); diff != "" {
				t.Errorf("%s\nEnsure(...): -want +got:\n%s", tc.reason, diff)
			}
			if !tc.want.checked {
				return
			}
			if diff := cmp.Diff(tc.want.state, ovngatewaytest.Dump(t, admin)); diff != "" {
				t.Errorf("%s\nNB after Ensure: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// rank is the chassis order ovngateway gives nodes in VPC vpc-a.
func rank(t *testing.T, nodes ...string) []ovngatewaytest.Chassis {
	var cands []ovngateway.Candidate
	for _, n := range nodes {
		cands = append(cands, ovngateway.Candidate{Node: n, Chassis: "ch-" + n})
	}
	members, err := ovngateway.Rank(ovngateway.Key("vpc-a"), cands)
	if err != nil {
		t.Fatal(err)
	}
	var out []ovngatewaytest.Chassis
	for _, m := range members {
		out = append(out, ovngatewaytest.Chassis{Name: m.Chassis, Priority: m.Priority})
	}
	return out
}

// TestRouterPortAppeared: a network whose pass found its router port
// missing is handed back once, when the NB client sees Kube-OVN make the
// port, so the controller reconciles it then rather than after RetryAfter;
// a network whose port was there, and a port no network waits for, hand
// back nothing.
func TestRouterPortAppeared(t *testing.T) {
	s := ovngatewaytest.StartInMemory(t)
	k := kube.NewClient(kube.ClientOptions{Scheme: scheme(), Objects: []client.Object{node("n1", true)}})
	var gw *kubenetgateway.Gateway
	appeared := make(chan []network.Key, 8)
	ready := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gc, err := ovngateway.Dial(ctx, ovngateway.Config{Address: s.Endpoint(), MaxBackoff: 100 * time.Millisecond,
		OnRouterPort: func(name string) {
			<-ready
			if keys := gw.RouterPortAppeared(name); len(keys) > 0 {
				appeared <- keys
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gc.Close)
	if gw, err = kubenetgateway.New(gc, k); err != nil {
		t.Fatal(err)
	}
	close(ready)
	admin := ovngatewaytest.Connect(t, s.Endpoint())
	ovngatewaytest.AddRouterPort(t, admin, "vpc-a", "vpc-a-net2")
	for _, n := range []string{"net1", "net2"} {
		if _, err := gw.Ensure(ctx, info(n)); err != nil {
			t.Fatal(err)
		}
	}
	ovngatewaytest.AddRouterPort(t, admin, "vpc-a", "vpc-a-other")
	ovngatewaytest.AddRouterPort(t, admin, "vpc-a", "vpc-a-net1")
	select {
	case keys := <-appeared:
		if want := []network.Key{{Namespace: "tenant-a", Name: "net1"}}; !cmp.Equal(keys, want) {
			t.Errorf("handed back %v when vpc-a-net1 appeared, want %v", keys, want)
		}
	case <-ctx.Done():
		t.Fatal("net1, which found vpc-a-net1 missing, was not handed back when the port appeared")
	}
	st, err := gw.Ensure(ctx, info("net1"))
	if err != nil || st.Reason != v1alpha1.ReasonChassisAssigned {
		t.Fatalf("Ensure(net1) after its port appeared: %+v, %v", st, err)
	}
	if keys := gw.RouterPortAppeared("vpc-a-net1"); len(keys) != 0 {
		t.Errorf("vpc-a-net1 handed back %v a second time", keys)
	}
	select {
	case keys := <-appeared:
		t.Errorf("handed back %v for a port no network waited for", keys)
	default:
	}
}
