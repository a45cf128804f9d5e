package vpcrender

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/cozyid"
)

// upgradeMachine plays a tenant editing its VPC release over time: each
// action proposes new values and renders them against the ProxmoxNetworks
// the last accepted render left in the cluster. A trivial model predicts
// whether the upgrade is refused: a Proxmox network of this VPC that the new
// values no longer render may go only if its subnet is gone from the list
// and no VM holds an address on it.
type upgradeMachine struct {
	spec    Spec            // the values of the last accepted render
	proxmox map[string]bool // model: subnet name -> Proxmox-backed
	used    map[string]int  // cluster: ProxmoxNetwork subnet name -> used addresses
}

var smNames = []string{"a", "b", "c", "d", "e"}

func (m *upgradeMachine) init() {
	m.spec = Spec{Namespace: "tenant-sm", Name: "vpc", Zones: []Zone{zoneDefault}}
	m.proxmox = map[string]bool{}
	m.used = map[string]int{}
}

func (m *upgradeMachine) cidrOf(name string) string {
	for i, n := range smNames {
		if n == name {
			return fmt.Sprintf("10.10.%d.0/24", i)
		}
	}
	panic(name)
}

// propose renders next against the cluster and checks the model's verdict.
func (m *upgradeMachine) propose(t *rapid.T, next []VPCSubnet) {
	s := m.spec
	s.Subnets = next
	vpcID := cozyid.VPC(s.Namespace, cozyid.VPCName(s.Name))
	for name, used := range m.used {
		s.Previous = append(s.Previous, Network{Name: string(cozyid.Subnet(s.Namespace, vpcID, cozyid.SubnetName(name))), VPCID: string(vpcID), SubnetName: name, UsedAddresses: used})
	}
	sort.Slice(s.Previous, func(i, j int) bool { return s.Previous[i].Name < s.Previous[j].Name })
	wantRefused := false
	listed := map[string]bool{}
	for _, sub := range next {
		listed[sub.Name] = sub.Proxmox != nil
	}
	for name, used := range m.used {
		px, ok := listed[name]
		if (ok && !px) || (!ok && used > 0) {
			wantRefused = true
		}
	}
	r, err := Render(s)
	if wantRefused {
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("model refuses %v against %v, render gave %v", next, m.used, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("model accepts %v against %v, render refused: %v", next, m.used, err)
	}
	m.spec = s
	m.spec.Previous = nil
	used := map[string]int{}
	for _, o := range r.Objects {
		if n, ok := o.(*v1alpha1.ProxmoxNetwork); ok {
			used[n.Labels[LabelSubnetName]] = m.used[n.Labels[LabelSubnetName]]
		}
	}
	m.used = used
	m.proxmox = map[string]bool{}
	for _, sub := range next {
		m.proxmox[sub.Name] = sub.Proxmox != nil
	}
}

func (m *upgradeMachine) subnets() []VPCSubnet {
	return append([]VPCSubnet(nil), m.spec.Subnets...)
}

func (m *upgradeMachine) add(t *rapid.T) {
	var free []string
	for _, n := range smNames {
		if _, ok := m.proxmox[n]; !ok {
			free = append(free, n)
		}
	}
	if len(free) == 0 {
		return // every name is listed
	}
	name := rapid.SampledFrom(free).Draw(t, "name")
	sub := VPCSubnet{Name: name, CIDR: m.cidrOf(name)}
	if rapid.Bool().Draw(t, "proxmox") {
		sub.Proxmox = &ProxmoxSubnet{}
	}
	m.propose(t, append(m.subnets(), sub))
}

func (m *upgradeMachine) remove(t *rapid.T) {
	subs := m.subnets()
	if len(subs) == 0 {
		return // nothing to change
	}
	i := rapid.IntRange(0, len(subs)-1).Draw(t, "i")
	m.propose(t, append(subs[:i], subs[i+1:]...))
}

func (m *upgradeMachine) toggle(t *rapid.T) {
	subs := m.subnets()
	if len(subs) == 0 {
		return // nothing to change
	}
	i := rapid.IntRange(0, len(subs)-1).Draw(t, "i")
	if subs[i].Proxmox == nil {
		subs[i].Proxmox = &ProxmoxSubnet{}
	} else {
		subs[i].Proxmox = nil
	}
	m.propose(t, subs)
}

func (m *upgradeMachine) placeVMs(t *rapid.T) {
	var names []string
	for n := range m.used {
		names = append(names, n)
	}
	if len(names) == 0 {
		return // no network to place VMs on
	}
	sort.Strings(names)
	n := rapid.SampledFrom(names).Draw(t, "network")
	m.used[n] = rapid.IntRange(0, 3).Draw(t, "used")
}

func (m *upgradeMachine) check(t *rapid.T) {
	var want, got []string
	for name, px := range m.proxmox {
		if px {
			want = append(want, name)
		}
	}
	for name := range m.used {
		got = append(got, name)
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ProxmoxNetworks in the cluster differ from the model's Proxmox subnets (-model +cluster):\n%s", diff)
	}
}

func TestUpgradeStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &upgradeMachine{}
		m.init()
		t.Repeat(map[string]func(*rapid.T){
			"add":    m.add,
			"remove": m.remove,
			"toggle": m.toggle,
			"vms":    m.placeVMs,
			"":       m.check,
		})
	})
}
