package network

import (
	"sort"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// Usage is what the cache knows about a pool's consumers.
type Usage struct {
	// Addresses counts the IPAddresses allocated from the pool.
	Addresses int
	// Machines counts the ProxmoxMachines with a NIC on the pool.
	Machines int
}

// PoolUsage returns the consumers of the InClusterIPPool namespace/name.
func (c *Cache) PoolUsage(namespace, name string) Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	pk := poolKey{namespace, name}
	return Usage{Addresses: c.addrCount[pk], Machines: c.machCount[pk]}
}

// vlan returns the observed Vlan named name.
func (c *Cache) vlan(name string) (vlanInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vlans[name]
	return v, ok
}

// claimHeld reports whether the observed claim on vid of provider names
// network.
func (c *Cache) claimHeld(provider string, vid int, network vlanalloc.NetworkRef) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ci, ok := c.claims[v1alpha1.VLANClaimName(provider, vid)]
	return ok && ci.Provider == provider && ci.R.VID == vid && ci.R.Network == network
}

// network returns the observed ProxmoxNetwork key.
func (c *Cache) network(key Key) (networkInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.networks[key]
	return n, ok
}

// ZoneNetworks counts the observed networks bound to zone.
func (c *Cache) ZoneNetworks(zone string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byZone[zone])
}

// zoneNoFailover returns namespace/name of each network of zone whose
// gateway group cannot fail over, sorted.
func (c *Cache) zoneNoFailover(zone string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.byZone[zone] {
		if c.networks[k].NoFailover {
			out = append(out, k.String())
		}
	}
	sort.Strings(out)
	return out
}

// networkKeys returns the keys of the networks of zone.
func (c *Cache) zoneNetworkKeys(zone string) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byZone[zone].sorted()
}

// subnetNetworks returns the networks whose spec.subnet is subnet.
func (c *Cache) subnetNetworks(subnet string) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bySubnet[subnet].sorted()
}

// poolNetworks returns the networks whose spec.ipPool is namespace/pool.
func (c *Cache) poolNetworks(namespace, pool string) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byPool[poolKey{namespace, pool}].sorted()
}

// namespaceNetworks returns the networks of a namespace.
func (c *Cache) namespaceNetworks(namespace string) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byNS[namespace].sorted()
}

// zoneVlans returns the observed Vlans labelled for zone, by name.
func (c *Cache) zoneVlans(zone string) []vlanInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]vlanInfo, 0, len(c.vlansByZone[zone]))
	for name := range c.vlansByZone[zone] {
		out = append(out, c.vlans[name])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// claimsOf returns the observed claims held by network.
func (c *Cache) claimsOf(network v1alpha1.NetworkReference) []claimInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []claimInfo
	for _, ci := range c.claims {
		if v1alpha1.NetworkReference(ci.R.Network) == network {
			out = append(out, ci)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].R.VID < out[j].R.VID })
	return out
}

// zoneClaims returns the observed claims allocated from zone.
func (c *Cache) zoneClaims(zone string) []claimInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []claimInfo
	for _, ci := range c.claims {
		if ci.R.Zone == zone {
			out = append(out, ci)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].R.VID < out[j].R.VID })
	return out
}

// providerVlans returns the keys of networks of zones on provider that hold
// no VLAN yet; they may get one when an ID frees up.
func (c *Cache) waitingNetworks(zones []string) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Key
	for _, z := range zones {
		for k := range c.byZone[z] {
			if n := c.networks[k]; n.VLAN == 0 && !n.Deleting {
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// zonesOn returns the names of the zones with a built allocator on provider.
func (c *Cache) zonesOn(provider string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name, z := range c.zones {
		if z.zone != nil && z.zone.ProviderNetwork() == provider {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// waitingIn returns the networks of a namespace that hold no VLAN yet.
func (c *Cache) waitingIn(namespace string) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Key
	for _, k := range c.byNS[namespace].sorted() {
		if n := c.networks[k]; n.VLAN == 0 && !n.Deleting {
			out = append(out, k)
		}
	}
	return out
}
