package kubestore_test

import (
	"context"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

func Example() {
	ctx := context.Background()
	c := kube.NewClient(kube.ClientOptions{Scheme: scheme()}) // any client.Client
	zone, _ := vlanalloc.NewZone(vlanalloc.ZoneSpec{Name: "zone-a", ProviderNetwork: "pxtenant", Ranges: []string{"100-199"}})
	idx, _ := kubestore.Load(ctx, c, zone)
	store := kubestore.New(c)
	a := vlanalloc.NewAllocator(idx, store)
	cl := claim(1)
	vid, _ := a.Allocate(ctx, cl)
	vid, _ = store.BindVlan(ctx, zone, cl, vid)
	fmt.Println(vid, kubestore.ClaimObject("pxtenant", vlanalloc.Reservation{VID: vid}).Name)
	// Output: 100 pxtenant.100
}
