package reconcilers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/reconcilers"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// portNB is an OVN NB whose router ports are missing until they appear; it
// counts the passes over each.
type portNB struct {
	mu       sync.Mutex
	appeared map[string]bool
	passes   map[string]int
}

func (n *portNB) Reconcile(_ context.Context, gw ovngateway.Gateway) (ovngateway.Outcome, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.passes[gw.RouterPort]++
	if !n.appeared[gw.RouterPort] {
		return ovngateway.Outcome{Reason: ovngateway.ReasonRouterPortMissing, Message: "no router port " + gw.RouterPort}, nil
	}
	return ovngateway.Outcome{Reason: ovngateway.ReasonChassisAssigned, Chassis: 1, Active: "ch-1"}, nil
}

func (n *portNB) Collect(context.Context, ovngateway.Exists) (ovngateway.Collected, error) {
	return ovngateway.Collected{}, nil
}

// only is the one router port passed over, and how many times.
func (n *portNB) only(t *testing.T) (string, int) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.passes) != 1 {
		t.Fatalf("passes over %v, want one router port", n.passes)
	}
	for p, c := range n.passes {
		return p, c
	}
	return "", 0
}

// TestRouterPortReachesItsNetwork runs the assembly as the simulator does,
// with the daemon's gateway over an NB whose router port is missing: the
// network waits for it, a converge without news from the NB passes over it
// no more, and the port's appearance, reported by the NB client through
// NBEvents, reconciles it at once (the clock stands still, so no
// RetryAfter did).
func TestRouterPortReachesItsNetwork(t *testing.T) {
	ctx := context.Background()
	nb := &portNB{appeared: map[string]bool{}, passes: map[string]int{}}
	events := reconcilers.NewNBEvents()
	h := sim.NewHarness(sim.Options{GatewayNB: nb, NBEvents: events})
	net, err := sim.Network("tenant-a", "net-a", "zone-a", "vpc-a", "10.1.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	world := append([]client.Object{sim.ProviderNetwork("physnet1", true), sim.Zone("zone-a", "vmbr1", "physnet1", "100-101"),
		sim.Namespace("tenant-a", nil), sim.TrunkNode("node-1", "physnet1", "ch-1")}, net...)
	for _, o := range world {
		if err := h.Client().Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	converge := func() {
		t.Helper()
		if _, err := h.Converge(ctx); err != nil {
			t.Fatal(err)
		}
	}
	converge()
	port, waiting := nb.only(t)
	converge()
	if _, again := nb.only(t); again != waiting {
		t.Fatalf("without news from the NB, %d more passes over %s", again-waiting, port)
	}
	nb.mu.Lock()
	nb.appeared[port] = true
	nb.mu.Unlock()
	events.RouterPort(port)
	converge()
	if _, after := nb.only(t); after <= waiting {
		t.Fatalf("router port %s appeared, and its network was not reconciled again (%d passes, as before)", port, after)
	}
}

// TestWatchedKinds: the Set watches the network controller's kinds, and
// runs the runner of each kind the API server serves: pool HA where
// Machines are served, the VPC address runner where IPAddressClaims are,
// pool healing where MachineDeployments are and it is asked for; none
// where the API serves none.
func TestWatchedKinds(t *testing.T) {
	s := sim.Scheme()
	if err := clusterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(s.PreferredVersionAllGroups())
	for gvk := range s.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	healing := &reconcilers.PoolHealing{}
	for name, tc := range map[string]struct {
		api     client.Client
		healing *reconcilers.PoolHealing
		want    map[string]bool
	}{
		"AllServed": {api: fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).Build(),
			want: map[string]bool{"*v1alpha1.ProxmoxNetwork": true, "*v1beta2.IPAddressClaim": true, "*v1beta2.IPAddress": true, "*v1beta2.Machine": true,
				"*v1beta2.MachineDeployment": false}},
		"AllServedHealing": {api: fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).Build(), healing: healing,
			want: map[string]bool{"*v1beta2.Machine": true, "*v1beta2.MachineDeployment": true}},
		"NoneServed": {api: sim.NewStore(true), healing: healing,
			want: map[string]bool{"*v1alpha1.ProxmoxNetwork": true, "*v1beta2.IPAddressClaim": false, "*v1beta2.Machine": false,
				"*v1beta2.MachineDeployment": false}},
	} {
		t.Run(name, func(t *testing.T) {
			set, err := reconcilers.New(reconcilers.Config{Client: tc.api, PoolHealing: tc.healing})
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]bool{}
			for _, o := range set.Watched() {
				kinds[fmt.Sprintf("%T", o)] = true
			}
			for kind, want := range tc.want {
				if kinds[kind] != want {
					t.Errorf("watches %s: %t, want %t (watched: %v)", kind, kinds[kind], want, kinds)
				}
			}
			if set.ManagesGateways() {
				t.Error("without an NB or a gateway no gateway is managed")
			}
		})
	}
}
