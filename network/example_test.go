package network_test

import (
	"fmt"
	"time"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	"github.com/pxsubstrate/pxsubstrate/network"
)

func ExamplePruneTimers() {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	value, newest := network.PruneTimers("", []string{"subnet-a"}, now, time.Time{})
	fmt.Println(value, newest.Add(network.DefaultSubnetPruneTimeout).Format(time.RFC3339))
	// Kube-OVN pruned the subnet: the timer goes with it.
	value, _ = network.PruneTimers(value, nil, now.Add(time.Minute), time.Time{})
	fmt.Printf("%q\n", value)
	// Output:
	// {"subnet-a":"2026-05-01T12:00:00Z"} 2026-05-01T12:10:00Z
	// ""
}

func ExampleCheckPoolSplit() {
	pool := ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.0.0.64-10.0.0.200"}, Prefix: 24, Gateway: "10.0.0.1"}
	total, _ := network.PoolTotal(pool)
	reason, msg := network.CheckPoolSplit("10.0.0.0/24", "10.0.0.1", []string{"10.0.0.64..10.0.0.191"}, pool)
	fmt.Println(total)
	fmt.Println(reason)
	fmt.Println(msg)
	// Output:
	// 137
	// PoolOverlapsSubnet
	// pool addresses 10.0.0.192-10.0.0.200 are not in the subnet's excludeIps, so Kube-OVN may give them to pods
}

func ExampleTriple() {
	fmt.Println(network.Triple("vmbr1", 3901, "subnet-b10ab7f7"))
	// Output: vmbr1/3901/subnet-b10ab7f7
}

func ExampleVNetEntry() {
	fmt.Println(network.VNetEntry("pxa3901", "subnet-b10ab7f7"))
	// Output: pxa3901/subnet-b10ab7f7
}
