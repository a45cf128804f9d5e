package pvesdn_test

import (
	"fmt"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// BenchmarkCheckRequests checks a zone of 4,093 VLANs (2-4094) on 16 nodes once per
// zone resync, as the controller does, and counts the API requests against
// the naive way: checking every VLAN as it is allocated, each time reading
// what that VLAN depends on (the node list, the SDN configuration and every
// node's network). Both run against the fake in the same run.
func BenchmarkCheckRequests(b *testing.B) {
	nodes := make([]string, 16)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("pve%02d", i+1)
	}
	srv := pvefake.NewServer(b, pvefake.WithCluster("bench"), pvefake.WithNodes(nodes...))
	for _, n := range nodes {
		must(b, srv.SetInterface(n, pvefake.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1", VLANAware: true,
			VIDs: "2-4094", MTU: 9000}))
	}
	c := srv.Client()
	z := zone(b, "2-4094") // every ID bridge-vids can allow (pve-vlan-id-or-range-list)
	b.ResetTimer()
	var once int
	for range b.N {
		rep, err := pvesdn.Check(ctx, c, z)
		must(b, err)
		if rep.Requests != 3+len(nodes) || !rep.OK() {
			b.Fatalf("one check: %d requests, findings %v", rep.Requests, rep.Findings)
		}
		once = rep.Requests
	}
	b.StopTimer()
	naive := 0
	for _, vid := range z.VLANs.IDs() {
		one := z
		one.VLANs = vlanalloc.Set{}
		one.VLANs.Add(vid)
		rep, err := pvesdn.Check(ctx, c, one)
		must(b, err)
		naive += rep.Requests
	}
	b.ReportMetric(float64(once), "requests/resync")
	b.ReportMetric(float64(naive), "requests/naive")
	b.ReportMetric(float64(naive)/float64(once), "naive/resync")
	b.Logf("zone of %d VLANs on %d nodes: %d requests per resync, %d checking each allocation (%.0fx)",
		z.VLANs.Len(), len(nodes), once, naive, float64(naive)/float64(once))
}
