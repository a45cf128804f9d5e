package vlanalloctest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/vlanalloctest"
)

func ExampleReserver() {
	ctx := context.Background()
	r := vlanalloctest.NewReserver()
	one := vlanalloc.Reservation{VID: 7, Network: vlanalloc.NetworkRef{Namespace: "t", Name: "one"}}
	two := vlanalloc.Reservation{VID: 7, Network: vlanalloc.NetworkRef{Namespace: "t", Name: "two"}}
	fmt.Println(r.Reserve(ctx, "pxtenant", one))
	fmt.Println(r.Reserve(ctx, "pxtenant", two))
	r.FailNext(errors.New("injected"))
	fmt.Println(r.Release(ctx, "pxtenant", one), len(r.Records("pxtenant")))
	// the write lands, the answer is lost
	r.LoseNext(errors.New("timeout"))
	fmt.Println(r.Reserve(ctx, "pxtenant", vlanalloc.Reservation{VID: 8, Network: two.Network}), len(r.Records("pxtenant")))
	// Output:
	// <nil>
	// VLAN 7 on provider network "pxtenant" is reserved by network t/one
	// injected 1
	// timeout 2
}
