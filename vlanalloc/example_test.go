package vlanalloc_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/vlanalloctest"
)

func ExampleParseRanges() {
	s, err := vlanalloc.ParseRanges([]string{"120", "101-119", "110-125"})
	fmt.Println(s.String(), s.Len(), err)
	_, err = vlanalloc.ParseRanges([]string{"100-4095"})
	fmt.Println(err)
	// Output:
	// 101-125 25 <nil>
	// vlan range "100-4095": 4095 is outside 1-4094
}

func ExampleIndex_Allocate() {
	zone, err := vlanalloc.NewZone(vlanalloc.ZoneSpec{
		Name: "zone-a", ProviderNetwork: "pxtenant", Ranges: []string{"100-102"}, Reserved: []int{101},
	})
	if err != nil {
		panic(err)
	}
	// A Vlan someone else created on the same provider network is used too.
	idx := vlanalloc.NewIndex(zone, []vlanalloc.Vlan{{Name: "legacy", VID: 100, Provider: "pxtenant"}}, nil)
	web := vlanalloc.Claim{Network: vlanalloc.NetworkRef{Namespace: "tenant-a", Name: "web"}, Vlan: "web-subnet"}
	db := vlanalloc.Claim{Network: vlanalloc.NetworkRef{Namespace: "tenant-a", Name: "db"}, Vlan: "db-subnet"}
	vid, _ := idx.Allocate(web)
	fmt.Println("web:", vid)
	_, err = idx.Allocate(db)
	fmt.Println("db:", errors.Is(err, vlanalloc.ErrExhausted), err)
	fmt.Printf("%+v\n", idx.Counts())
	// Output:
	// web: 102
	// db: true cannot allocate a VLAN for tenant-a/db in zone "zone-a": no free VLAN left in the zone
	// {Total:2 Allocated:1 Free:0 Networks:1}
}

func ExampleAllocator() {
	ctx := context.Background()
	zone, _ := vlanalloc.NewZone(vlanalloc.ZoneSpec{Name: "zone-a", ProviderNetwork: "pxtenant", Ranges: []string{"100-199"}})
	shared := vlanalloctest.NewReserver()
	// Two replicas whose caches were both empty when they started.
	a := vlanalloc.NewAllocator(vlanalloc.NewIndex(zone, nil, nil), shared)
	b := vlanalloc.NewAllocator(vlanalloc.NewIndex(zone, nil, nil), shared)
	first, _ := a.Allocate(ctx, vlanalloc.Claim{Network: vlanalloc.NetworkRef{Namespace: "t", Name: "one"}, Vlan: "one"})
	second, _ := b.Allocate(ctx, vlanalloc.Claim{Network: vlanalloc.NetworkRef{Namespace: "t", Name: "two"}, Vlan: "two"})
	fmt.Println(first, second)
	// Output: 100 101
}
