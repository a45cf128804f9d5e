package kubestore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

const provider = "pxtenant"

func scheme() *runtime.Scheme {
	s := kube.Scheme()
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(kubeovnv1.AddToScheme(s))
	return s
}

func network(i int) vlanalloc.NetworkRef {
	return vlanalloc.NetworkRef{Namespace: fmt.Sprintf("tenant-%d", i%5), Name: fmt.Sprintf("net-%d", i)}
}

func claim(i int) vlanalloc.Claim {
	return vlanalloc.Claim{Network: network(i), Vlan: fmt.Sprintf("subnet-%d", i)}
}

func testZone(t testing.TB, ranges ...string) *vlanalloc.Zone {
	t.Helper()
	z, err := vlanalloc.NewZone(vlanalloc.ZoneSpec{Name: "zone-a", ProviderNetwork: provider, Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func foreignVlan(name string, vid int, provider string) *kubeovnv1.Vlan {
	return &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.VlanSpec{ID: vid, Provider: provider}}
}

func TestReserveAndRelease(t *testing.T) {
	ctx := context.Background()
	c := kube.NewClient(kube.ClientOptions{Scheme: scheme()})
	s := kubestore.New(c)
	mine := vlanalloc.Reservation{VID: 120, Zone: "zone-a", Network: network(1), Vlan: "subnet-1"}
	theirs := vlanalloc.Reservation{VID: 120, Zone: "zone-b", Network: network(2), Vlan: "subnet-2"}
	if err := s.Reserve(ctx, provider, mine); err != nil {
		t.Fatal(err)
	}
	if err := s.Reserve(ctx, provider, mine); err != nil {
		t.Fatalf("reserving again for the same network must succeed: %v", err)
	}
	err := s.Reserve(ctx, provider, theirs)
	var taken *vlanalloc.TakenError
	if !errors.As(err, &taken) || taken.Holder != mine {
		t.Fatalf("a second network must get a TakenError naming the holder, got %v", err)
	}
	if err.Error() != `VLAN 120 on provider network "pxtenant" is reserved by network tenant-1/net-1` {
		t.Errorf("message: %s", err)
	}
	if err := s.Release(ctx, provider, theirs); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.ProxmoxVLANClaim
	if err := c.Get(ctx, client.ObjectKey{Name: "pxtenant.120"}, &got); err != nil {
		t.Fatalf("releasing someone else's ID must leave the claim: %v", err)
	}
	want := kubestore.ClaimObject(provider, mine)
	if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
		t.Errorf("claim spec: -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(want.Labels, got.Labels); diff != "" {
		t.Errorf("claim labels: -want +got:\n%s", diff)
	}
	if err := s.Release(ctx, provider, mine); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "pxtenant.120"}, &got); err == nil {
		t.Fatal("the holder's release must delete the claim")
	}
	if err := s.Release(ctx, provider, mine); err != nil {
		t.Fatalf("releasing a missing claim is not an error: %v", err)
	}
}

func TestReserveLostAnswer(t *testing.T) {
	ctx := context.Background()
	faults := kube.NewFaults(1)
	if err := faults.Add(kube.Fault{Verbs: []kube.Verb{kube.VerbCreate}, Err: kube.Timeout, After: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	c := kube.NewClient(kube.ClientOptions{Scheme: scheme(), Faults: faults})
	idx, err := kubestore.Load(ctx, c, testZone(t, "100-101"))
	if err != nil {
		t.Fatal(err)
	}
	a := vlanalloc.NewAllocator(idx, kubestore.New(c))
	if _, err := a.Allocate(ctx, claim(1)); err == nil {
		t.Fatal("a lost answer must be reported")
	}
	vid, err := a.Allocate(ctx, claim(1))
	if err != nil || vid != 100 {
		t.Fatalf("the retry must find the claim the lost write created: %d, %v", vid, err)
	}
	var claims v1alpha1.ProxmoxVLANClaimList
	if err := c.List(ctx, &claims); err != nil || len(claims.Items) != 1 {
		t.Fatalf("want exactly one claim, got %d (%v)", len(claims.Items), err)
	}
}

func TestSplitBrainFakeClient(t *testing.T) {
	splitBrain(t, kube.NewClient(kube.ClientOptions{Scheme: scheme()}), 60)
}

// splitBrain runs two replicas whose caches are loaded once, before any
// allocation, and never refreshed. Both reconcile an overlapping set of
// networks at the same time: allocate, then create the Vlan. At the end no
// two Vlans on the provider network share an ID, every network has one Vlan
// whose ID a claim holds for it, and no claim is left over.
func splitBrain(t *testing.T, c client.Client, n int) {
	ctx := context.Background()
	for _, v := range []*kubeovnv1.Vlan{foreignVlan("legacy-a", 100, provider), foreignVlan("legacy-b", 102, provider), foreignVlan("elsewhere", 101, "other")} {
		if err := c.Create(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	zone := testZone(t, fmt.Sprintf("100-%d", 100+2*n))
	store := kubestore.New(c)
	var replicas []*vlanalloc.Allocator
	for range 2 {
		idx, err := kubestore.Load(ctx, c, zone)
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, vlanalloc.NewAllocator(idx, store))
	}
	var wg sync.WaitGroup
	for r, a := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := r * n / 2; i < r*n/2+n; i++ { // the middle third is reconciled by both
				if err := reconcileVLAN(ctx, a, store, zone, claim(i)); err != nil {
					t.Errorf("replica %d, network %d: %v", r, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	assertWorld(t, c, n+n/2)
}

// reconcileVLAN is the allocation part of a network reconcile: get an ID,
// create the Vlan under it, and adopt the Vlan's ID when another replica
// created it first.
func reconcileVLAN(ctx context.Context, a *vlanalloc.Allocator, s *kubestore.Store, zone *vlanalloc.Zone, cl vlanalloc.Claim) error {
	vid, err := a.Allocate(ctx, cl)
	if err != nil {
		return err
	}
	got, err := s.BindVlan(ctx, zone, cl, vid)
	if err != nil || got == vid {
		return err
	}
	a.Index().ForgetReservation(vid)
	a.Index().ObserveVlan(vlanalloc.Vlan{Name: cl.Vlan, VID: got, Provider: zone.ProviderNetwork(), Zone: zone.Name(), Network: cl.Network})
	again, err := a.Allocate(ctx, cl)
	if err == nil && again != got {
		err = fmt.Errorf("adopting Vlan %q gave %d, want %d", cl.Vlan, again, got)
	}
	return err
}

func assertWorld(t *testing.T, c client.Client, networks int) {
	t.Helper()
	ctx := context.Background()
	var vlans kubeovnv1.VlanList
	var claims v1alpha1.ProxmoxVLANClaimList
	if err := c.List(ctx, &vlans); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &claims); err != nil {
		t.Fatal(err)
	}
	byID := map[int]string{}
	ours := 0
	for _, v := range vlans.Items {
		if v.Spec.Provider != provider {
			continue
		}
		if other, ok := byID[v.Spec.ID]; ok {
			t.Errorf("VLAN %d is carried by both Vlan %q and Vlan %q", v.Spec.ID, other, v.Name)
		}
		byID[v.Spec.ID] = v.Name
		if v.Labels[v1alpha1.LabelNetworkName] != "" {
			ours++
		}
	}
	if ours != networks {
		t.Errorf("%d networks have a Vlan, want %d", ours, networks)
	}
	if len(claims.Items) != networks {
		t.Errorf("%d claims, want one per network (%d)", len(claims.Items), networks)
	}
	for _, cl := range claims.Items {
		if name := byID[int(cl.Spec.VLAN)]; name != cl.Spec.VLANName {
			t.Errorf("claim %s is for Vlan %q but VLAN %d is carried by %q", cl.Name, cl.Spec.VLANName, cl.Spec.VLAN, name)
		}
	}
}
