package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
)

// holding says that network holds vlan, as source records it: a
// ProxmoxNetwork's status, a Kube-OVN Vlan or a ProxmoxVLANClaim.
type holding struct {
	source, network string
	vlan            int
}

// duplicates returns one line for each VLAN that more than one network
// holds among hs, which are read from one zone (and its provider network)
// at one time, whatever the sources. A network may hold a VLAN through
// several sources at once; that is one holder.
func duplicates(hs []holding) []string {
	holders := map[int]map[string][]string{}
	for _, h := range hs {
		if h.vlan == 0 {
			continue
		}
		if holders[h.vlan] == nil {
			holders[h.vlan] = map[string][]string{}
		}
		holders[h.vlan][h.network] = append(holders[h.vlan][h.network], h.source)
	}
	var out []string
	for _, vid := range slices.Sorted(maps.Keys(holders)) {
		if len(holders[vid]) < 2 {
			continue
		}
		var who []string
		for _, n := range slices.Sorted(maps.Keys(holders[vid])) {
			who = append(who, n+" ("+strings.Join(holders[vid][n], ", ")+")")
		}
		out = append(out, fmt.Sprintf("VLAN %d held by %s", vid, strings.Join(who, " and ")))
	}
	return out
}

// holdings reads, at once as far as three lists go, every VLAN held in
// cl's zone: the networks' status, the Vlans on its provider network (by
// the network their label names) and the claims of its provider network
// (by the network they name).
func holdings(ctx context.Context, c client.Reader, cl controllertest.Cluster) ([]holding, error) {
	var hs []holding
	var nets v1alpha1.ProxmoxNetworkList
	if err := c.List(ctx, &nets, client.InNamespace(cl.Tenant)); err != nil {
		return nil, err
	}
	for _, n := range nets.Items {
		if n.Spec.Zone == cl.Zone {
			hs = append(hs, holding{"status", n.Name, int(n.Status.VLAN)})
		}
	}
	var vlans kubeovnv1.VlanList
	if err := c.List(ctx, &vlans); err != nil {
		return nil, err
	}
	for _, v := range vlans.Items {
		if v.Spec.Provider == cl.ProviderNetwork {
			// A foreign Vlan (no network label) is a holder of its own.
			who := v.Labels[v1alpha1.LabelNetworkName]
			if who == "" {
				who = "Vlan " + v.Name
			}
			hs = append(hs, holding{"Vlan " + v.Name, who, v.Spec.ID})
		}
	}
	var claims v1alpha1.ProxmoxVLANClaimList
	if err := c.List(ctx, &claims, client.MatchingLabels{v1alpha1.LabelProviderNetwork: cl.ProviderNetwork}); err != nil {
		return nil, err
	}
	for _, cm := range claims.Items {
		hs = append(hs, holding{"claim " + cm.Name, cm.Spec.Network.Name, int(cm.Spec.VLAN)})
	}
	return hs, nil
}

// sampler reads the holdings of one zone every period until stopped and
// keeps every duplicate it saw, and every network whose status moved from
// one VLAN to another. A sample that fails (the API server or etcd is
// down) is counted and skipped.
type sampler struct {
	mu              sync.Mutex
	samples, failed int
	dups, moved     []string
	// first is the first VLAN each network's status showed.
	first      map[string]int
	stop, done chan struct{}
}

func startSampler(c client.Reader, cl controllertest.Cluster, period time.Duration) *sampler {
	s := &sampler{first: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			s.sample(c, cl)
			select {
			case <-s.stop:
				return
			case <-time.After(period):
			}
		}
	}()
	return s
}

func (s *sampler) sample(c client.Reader, cl controllertest.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hs, err := holdings(ctx, c, cl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed++
		return
	}
	s.samples++
	now := time.Now().Format("15:04:05.000")
	for _, d := range duplicates(hs) {
		s.dups = append(s.dups, now+" "+d)
	}
	for _, h := range hs {
		if h.source != "status" || h.vlan == 0 {
			continue
		}
		if was, ok := s.first[h.network]; !ok {
			s.first[h.network] = h.vlan
		} else if was != h.vlan {
			s.moved = append(s.moved, fmt.Sprintf("%s network %s moved from VLAN %d to %d", now, h.network, was, h.vlan))
		}
	}
}

// Stop ends the sampling and waits for the sample in hand.
func (s *sampler) Stop() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// result returns the samples taken, those that failed, and the
// duplicates seen so far.
func (s *sampler) result() (samples, failed int, dups []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.failed, slices.Clone(s.dups)
}

// check fails t when the sampler saw a duplicate or a network that moved
// to another VLAN, saying when.
func (s *sampler) check(t testing.TB, when string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.dups) > 0 {
		t.Errorf("%s: %d duplicate VLAN samples, first: %s", when, len(s.dups), s.dups[0])
	}
	if len(s.moved) > 0 {
		t.Errorf("%s: %d networks moved to another VLAN, first: %s", when, len(s.moved), s.moved[0])
	}
}

// TestSampler shows that the sampler sees a duplicate planted in each
// source, and none where one network holds its VLAN through all three or
// where another zone uses the same ID.
func TestSampler(t *testing.T) {
	cl := cluster("s", 0)
	other := cluster("o", 0)
	net := func(cl controllertest.Cluster, name string, vid int32) client.Object {
		return &v1alpha1.ProxmoxNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Tenant, Name: name},
			Spec: v1alpha1.ProxmoxNetworkSpec{Zone: cl.Zone}, Status: v1alpha1.ProxmoxNetworkStatus{VLAN: vid}}
	}
	vlan := func(cl controllertest.Cluster, name, network string, vid int) client.Object {
		v := &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.VlanSpec{ID: vid, Provider: cl.ProviderNetwork}}
		if network != "" {
			v.Labels = map[string]string{v1alpha1.LabelNetworkName: network}
		}
		return v
	}
	claim := func(cl controllertest.Cluster, network string, vid int32) client.Object {
		return &v1alpha1.ProxmoxVLANClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.VLANClaimName(cl.ProviderNetwork, int(vid)), Labels: map[string]string{v1alpha1.LabelProviderNetwork: cl.ProviderNetwork}},
			Spec:       v1alpha1.ProxmoxVLANClaimSpec{ProviderNetwork: cl.ProviderNetwork, VLAN: vid, Zone: cl.Zone, Network: v1alpha1.NetworkReference{Namespace: cl.Tenant, Name: network}},
		}
	}
	// a holds 100 everywhere; b holds 101; the other zone's c holds 100 too.
	clean := []client.Object{
		net(cl, "a", 100), vlan(cl, "a", "a", 100), claim(cl, "a", 100),
		net(cl, "b", 101), vlan(cl, "b", "b", 101), claim(cl, "b", 101),
		net(other, "c", 100), vlan(other, "c", "c", 100), claim(other, "c", 100),
	}
	for name, tc := range map[string]struct {
		plant []client.Object
		want  []string
	}{
		"clean":  {},
		"status": {plant: []client.Object{net(cl, "d", 100)}, want: []string{"VLAN 100 held by a (status, Vlan a, claim pns.100) and d (status)"}},
		"Vlan":   {plant: []client.Object{vlan(cl, "d", "d", 101)}, want: []string{"VLAN 101 held by b (status, Vlan b, claim pns.101) and d (Vlan d)"}},
		"foreign Vlan": {plant: []client.Object{vlan(cl, "x", "", 101)},
			want: []string{"VLAN 101 held by Vlan x (Vlan x) and b (status, Vlan b, claim pns.101)"}},
		"claim of another network": {plant: []client.Object{net(cl, "d", 102), claim(cl, "e", 102)},
			want: []string{"VLAN 102 held by d (status) and e (claim pns.102)"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(controllertest.Scheme()).WithObjects(append(slices.Clone(clean), tc.plant...)...).Build()
			hs, err := holdings(context.Background(), c, cl)
			if err != nil {
				t.Fatal(err)
			}
			if got := duplicates(hs); !slices.Equal(got, tc.want) {
				t.Errorf("duplicates = %q, want %q", got, tc.want)
			}
			s := startSampler(c, cl, 10*time.Millisecond)
			time.Sleep(50 * time.Millisecond)
			s.Stop()
			samples, failed, dups := s.result()
			if samples == 0 || failed != 0 {
				t.Fatalf("samples %d, failed %d", samples, failed)
			}
			if (len(dups) > 0) != (len(tc.want) > 0) {
				t.Errorf("the sampler saw %d duplicates, want them: %v", len(dups), len(tc.want) > 0)
			}
		})
	}
	t.Run("moved", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(controllertest.Scheme()).WithObjects(clean...).Build()
		s := startSampler(c, cl, 5*time.Millisecond)
		defer s.Stop()
		controllertest.Eventually(t, 5*time.Second, nil, func() (bool, string) {
			n, _, _ := s.result()
			return n > 0, "no sample yet"
		})
		n := &v1alpha1.ProxmoxNetwork{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: cl.Tenant, Name: "b"}, n); err != nil {
			t.Fatal(err)
		}
		n.Status.VLAN = 102
		if err := c.Update(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		controllertest.Eventually(t, 5*time.Second, nil, func() (bool, string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return slices.ContainsFunc(s.moved, func(m string) bool { return strings.HasSuffix(m, "network b moved from VLAN 101 to 102") }),
				fmt.Sprintf("moves seen: %q", s.moved)
		})
	})
}
