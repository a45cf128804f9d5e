package pveha_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/pveha"
)

// TestHAStateMachine drives pools that grow and shrink (a removed worker
// released, then its VM destroyed) and an operator's own HA resources
// through Read, NewPlan with Prune and Apply on the fake, and checks after
// each converge: every worker VM is an HA resource, each pool's rule holds
// its first min(workers, nodes) VMs (none below two) and those run on
// different nodes, nothing the package made outlives its worker, the
// operator's resources are untouched, and a second plan is empty.
func TestHAStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		srv, c := cluster(t, pveacl.PVE9, 0)
		root := srv.Client()
		ctx := context.Background()
		pools := map[string][]int{}
		foreign := map[int]bool{}
		next := 101
		names := []string{"a/md0", "a/md1", "b/md0"}
		rt.Repeat(map[string]func(*rapid.T){
			"grow": func(rt *rapid.T) {
				p := rapid.SampledFrom(names).Draw(rt, "pool")
				node := rapid.SampledFrom(nodes).Draw(rt, "node")
				must(t, srv.AddVM(pvefake.VMSpec{VMID: next, Node: node, Running: true}))
				pools[p] = append(pools[p], next)
				next++
			},
			"shrink": func(rt *rapid.T) {
				var grown []string
				for _, name := range names {
					if len(pools[name]) > 0 {
						grown = append(grown, name)
					}
				}
				if len(grown) == 0 {
					return // nothing to shrink yet: a no-op step
				}
				p := rapid.SampledFrom(grown).Draw(rt, "pool")
				i := rapid.IntRange(0, len(pools[p])-1).Draw(rt, "worker")
				vmid := pools[p][i]
				pools[p] = slices.Delete(pools[p], i, i+1)
				if _, err := pveha.Release(ctx, c, vmid); err != nil {
					rt.Fatal(err)
				}
				node := nodesOf(t, srv, vmid)[vmid]
				var upid string
				must(t, root.Post(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/status/stop", node, vmid), map[string]string{}, &upid))
				must(t, root.Delete(ctx, fmt.Sprintf("/nodes/%s/qemu/%d", node, vmid), &upid))
			},
			"operator": func(rt *rapid.T) {
				must(t, srv.AddVM(pvefake.VMSpec{VMID: next, Node: "pve2", Running: true}))
				must(t, root.Post(ctx, "/cluster/ha/resources", map[string]string{"sid": pveha.SID(next)}, nil))
				foreign[next] = true
				next++
			},
			"": func(rt *rapid.T) {
				var list []pveha.Pool
				for _, name := range names {
					if len(pools[name]) > 0 {
						list = append(list, pool(name, pools[name]...))
					}
				}
				converge(t, c, list, pveha.Options{Prune: true})
				st, err := pveha.Read(ctx, c)
				must(t, err)
				have := map[string]pveha.Resource{}
				for _, r := range st.Resources {
					have[r.SID] = r
				}
				owned := 0
				for _, name := range names {
					vms := pools[name]
					for _, id := range vms {
						if _, ok := have[pveha.SID(id)]; !ok {
							rt.Fatalf("worker VM %d of %s is no HA resource", id, name)
						}
					}
					owned += len(vms)
					apart := vms[:min(len(vms), len(nodes))]
					var rule *pveha.Rule
					for i := range st.Rules {
						if st.Rules[i].ID == pveha.RuleID(name) {
							rule = &st.Rules[i]
						}
					}
					switch {
					case len(apart) < 2 && rule != nil:
						rt.Fatalf("pool %s with %d VMs has rule %+v", name, len(vms), rule)
					case len(apart) < 2:
					case rule == nil:
						rt.Fatalf("pool %s with %d VMs has no rule", name, len(vms))
					default:
						want := make([]string, 0, len(apart))
						for _, id := range apart {
							want = append(want, pveha.SID(id))
						}
						slices.Sort(want)
						if !slices.Equal(rule.Members(), want) || len(rule.Errors) > 0 {
							rt.Fatalf("pool %s: rule %+v, want members %v", name, rule, want)
						}
						seen := map[string]int{}
						for id, n := range nodesOf(t, srv, apart...) {
							if other, ok := seen[n]; ok {
								rt.Fatalf("pool %s: VMs %d and %d share node %s", name, id, other, n)
							}
							seen[n] = id
						}
					}
				}
				for id := range foreign {
					if r, ok := have[pveha.SID(id)]; !ok || r.Comment != "" {
						rt.Fatalf("the operator's resource of VM %d: %+v (present %v)", id, r, ok)
					}
				}
				if len(st.Resources) != owned+len(foreign) {
					rt.Fatalf("%d HA resources, want %d workers and %d of the operator's", len(st.Resources), owned, len(foreign))
				}
			},
		})
	})
}
