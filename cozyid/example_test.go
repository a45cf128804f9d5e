package cozyid_test

import (
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/cozyid"
)

func ExampleSubnet() {
	vpc := cozyid.VPC("tenant-test", "net")
	fmt.Println(vpc, cozyid.Subnet("tenant-test", vpc, "private"))
	// Output: vpc-a40741 subnet-b10ab7f7
}
