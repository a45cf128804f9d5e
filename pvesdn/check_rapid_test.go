package pvesdn_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// TestCheckExplainsEveryWithheldVLAN: whatever the nodes look like, the
// carryable VLANs are zone VLANs, no VLAN a finding names is carryable,
// and every zone VLAN that is not carryable is named by a finding.
func TestCheckExplainsEveryWithheldVLAN(t *testing.T) {
	srv := pvefake.NewServer(t, pvefake.WithCluster("lab"), pvefake.WithNodes("pve1", "pve2"))
	c := srv.Client()
	rapid.Check(t, func(rt *rapid.T) {
		for _, node := range []string{"pve1", "pve2"} {
			lo := rapid.IntRange(2, 120).Draw(rt, node+"-lo")
			hi := rapid.IntRange(lo+1, 130).Draw(rt, node+"-hi")
			br := pvefake.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1",
				VLANAware: rapid.Bool().Draw(rt, node+"-aware"), VIDs: fmt.Sprintf("%d-%d", lo, hi),
				MTU: rapid.SampledFrom([]int{0, 1500, 9000}).Draw(rt, node+"-mtu")}
			must(rt, srv.SetInterface(node, br))
			_ = srv.RemoveInterface(node, "eno1.105")
			if rapid.Bool().Draw(rt, node+"-vlanif") {
				must(rt, srv.SetInterface(node, pvefake.Interface{Name: "eno1.105", Type: "vlan"}))
			}
		}
		var vlans vlanalloc.Set
		for vid := 100; vid <= 110; vid++ {
			vlans.Add(vid)
		}
		z := pvesdn.Zone{Name: "z", Bridge: "vmbr0", VLANs: vlans, MTU: rapid.SampledFrom([]int{0, 1500, 9000}).Draw(rt, "zone-mtu")}
		rep, err := pvesdn.Check(ctx, c, z)
		must(rt, err)
		carry := rep.CarryableSet()
		named := vlanalloc.Set{}
		for _, f := range rep.Findings {
			if f.VLANs == "" {
				continue
			}
			ids, err := vlanalloc.ParseRanges(strings.Split(f.VLANs, ","))
			must(rt, err)
			for _, vid := range ids.IDs() {
				named.Add(vid)
				if carry.Has(vid) {
					rt.Fatalf("VLAN %d is carryable though %s names it", vid, f.Code)
				}
			}
		}
		for _, vid := range vlans.IDs() {
			if !carry.Has(vid) && !named.Has(vid) {
				rt.Fatalf("VLAN %d is withheld without a finding: %+v", vid, rep.Findings)
			}
		}
		for _, vid := range carry.IDs() {
			if !vlans.Has(vid) {
				rt.Fatalf("carryable VLAN %d is not a zone VLAN", vid)
			}
		}
	})
}
