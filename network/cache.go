package network

import (
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

// Key names a namespaced object.
type Key = client.ObjectKey

// MachineKinds are the capmox ProxmoxMachine versions the controller reads:
// v1alpha1 (capmox v0.7) and v1alpha2 (capmox v0.8 and later).
var MachineKinds = []schema.GroupVersionKind{
	{Group: capmox.Group, Version: "v1alpha1", Kind: capmox.KindProxmoxMachine},
	{Group: capmox.Group, Version: "v1alpha2", Kind: capmox.KindProxmoxMachine},
}

// vlanInfo is an observed Kube-OVN Vlan: what the allocator reads
// (kubestore.ObservedVlan) and what the network's decisions add.
type vlanInfo struct {
	vlanalloc.Vlan
	Finalizer bool
	Timers    bool
	Deleting  bool
	Conflict  bool
}

func observeVlan(v *kubeovnv1.Vlan) vlanInfo {
	_, timers := v.Annotations[v1alpha1.AnnotationDeletedSubnets]
	return vlanInfo{
		Vlan:      kubestore.ObservedVlan(v),
		Finalizer: controllerutil.ContainsFinalizer(v, v1alpha1.Finalizer),
		Timers:    timers,
		Deleting:  !v.DeletionTimestamp.IsZero(),
		Conflict:  v.Status.Conflict,
	}
}

// ours reports whether the Vlan carries the labels of a network.
func (v vlanInfo) ours() bool { return v.Network.Namespace != "" && v.Network.Name != "" }

// networkInfo is an observed ProxmoxNetwork.
type networkInfo struct {
	Key    Key
	Zone   string
	Subnet string
	Pool   string
	VLAN   int32
	Bridge string
	// VNet is status.vnet: the VLAN's Proxmox SDN VNet, or "".
	VNet     string
	Deleting bool
	Held     bool // carries the network finalizer
	// NoFailover: GatewayFailover is False/NoFailover.
	NoFailover bool
}

func observeNetwork(n *v1alpha1.ProxmoxNetwork) networkInfo {
	return networkInfo{
		Key:        client.ObjectKeyFromObject(n),
		Zone:       n.Spec.Zone,
		Subnet:     n.Spec.Subnet,
		Pool:       n.Spec.IPPool,
		VLAN:       n.Status.VLAN,
		Bridge:     n.Status.Bridge,
		VNet:       n.Status.VNet,
		Deleting:   !n.DeletionTimestamp.IsZero(),
		Held:       controllerutil.ContainsFinalizer(n, v1alpha1.Finalizer),
		NoFailover: noFailover(n),
	}
}

// noFailover reports whether n's GatewayFailover is False/NoFailover.
func noFailover(n *v1alpha1.ProxmoxNetwork) bool {
	c := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionGatewayFailover)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonNoFailover
}

// poolKey names an InClusterIPPool.
type poolKey struct{ namespace, name string }

// claimInfo is an observed ProxmoxVLANClaim.
type claimInfo struct {
	Provider string
	R        vlanalloc.Reservation
}

type keySet map[Key]struct{}

// sorted returns the keys in the order of their "<namespace>/<name>"
// strings.
func (s keySet) sorted() []Key { return sortKeys(maps.Keys(s), len(s)) }

// keyList is a set of keys kept in a slice, for indexes whose entries hold
// one network unless the configuration conflicts (a subnet or a pool named
// by two networks): a slice of one key costs a tenth of a map of one.
type keyList []Key

func (l keyList) sorted() []Key { return sortKeys(slices.Values(l), len(l)) }

func addToList[K comparable](m map[K]keyList, k K, v Key) {
	if l := m[k]; !slices.Contains(l, v) {
		m[k] = append(l, v)
	}
}

func delFromList[K comparable](m map[K]keyList, k K, v Key) {
	l := m[k]
	i := slices.Index(l, v)
	switch {
	case i < 0:
	case len(l) == 1:
		delete(m, k)
	default:
		m[k] = slices.Delete(l, i, i+1)
	}
}

// sortKeys returns the n keys of seq in the order of their
// "<namespace>/<name>" strings, building each string once rather than in
// every comparison.
func sortKeys(seq iter.Seq[Key], n int) []Key {
	type named struct {
		k Key
		s string
	}
	all := make([]named, 0, n)
	for k := range seq {
		all = append(all, named{k, k.String()})
	}
	slices.SortFunc(all, func(a, b named) int { return strings.Compare(a.s, b.s) })
	out := make([]Key, len(all))
	for i, n := range all {
		out[i] = n.k
	}
	return out
}

// Cache is the controller's in-memory view of the objects it must count or
// search: Kube-OVN Vlans, VLAN claims, ProxmoxNetworks, IPAddresses and
// ProxmoxMachines, indexed the way reconciles ask for them, plus one VLAN
// allocator per zone kept current from the same events. It is fed by
// Observe and Forget: from informers in a controller process (Watch), from
// the controller's own client (Feed) and from a full Load at start. It never
// reads the API itself, so a query costs no request however large the zone.
// It is safe for concurrent use.
type Cache struct {
	mu sync.Mutex

	// withheld holds, per zone, the VLANs its Proxmox nodes cannot carry;
	// with checkZones a zone to be checked withholds all until its first
	// check.
	withheld   map[string]string
	checkZones bool

	vlans       map[string]vlanInfo
	vlansByZone map[string]map[string]struct{}
	claims      map[string]claimInfo

	networks map[Key]networkInfo
	byZone   map[string]keySet
	byNS     map[string]keySet
	// nsTriples counts, per namespace, the networks behind each triple of
	// its annotation; nsAnnotation memoises the annotation until a triple
	// comes or goes.
	nsTriples    map[string]map[string]int
	nsAnnotation map[string]string
	nsSeen       map[string]*seenAnnotation
	bySubnet     map[string]keyList
	byPool       map[poolKey]keyList
	addresses    map[Key]poolKey
	addrCount    map[poolKey]int
	machines     map[Key][]string
	machCount    map[poolKey]int
	zones        map[string]*zoneState
	onChange     func(obj client.Object, gone bool)
	onChangeMu   sync.RWMutex
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{
		vlans:        map[string]vlanInfo{},
		vlansByZone:  map[string]map[string]struct{}{},
		claims:       map[string]claimInfo{},
		networks:     map[Key]networkInfo{},
		byZone:       map[string]keySet{},
		byNS:         map[string]keySet{},
		nsTriples:    map[string]map[string]int{},
		nsAnnotation: map[string]string{},
		nsSeen:       map[string]*seenAnnotation{},
		bySubnet:     map[string]keyList{},
		byPool:       map[poolKey]keyList{},
		addresses:    map[Key]poolKey{},
		addrCount:    map[poolKey]int{},
		machines:     map[Key][]string{},
		machCount:    map[poolKey]int{},
		zones:        map[string]*zoneState{},
	}
}

// OnChange sets a function called, outside the cache's lock, after every
// Observe (gone false) and Forget (gone true) with the object concerned.
func (c *Cache) OnChange(f func(obj client.Object, gone bool)) {
	c.onChangeMu.Lock()
	defer c.onChangeMu.Unlock()
	c.onChange = f
}

func (c *Cache) notify(obj client.Object, gone bool) {
	c.onChangeMu.RLock()
	f := c.onChange
	c.onChangeMu.RUnlock()
	if f != nil {
		f(obj, gone)
	}
}

// Observe records a created or updated object. Kinds the cache does not
// index are only passed to OnChange.
func (c *Cache) Observe(obj client.Object) {
	obj = typed(obj)
	c.record(obj, false)
	c.notify(obj, false)
}

// Forget records that obj is gone.
func (c *Cache) Forget(obj client.Object) {
	obj = typed(obj)
	c.record(obj, true)
	c.notify(obj, true)
}

func (c *Cache) record(obj client.Object, gone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := client.ObjectKeyFromObject(obj)
	switch o := obj.(type) {
	case *kubeovnv1.Vlan:
		c.dropVlan(o.Name)
		if !gone {
			c.putVlan(observeVlan(o))
		}
	case *v1alpha1.ProxmoxVLANClaim:
		c.dropClaim(o.Name)
		if !gone {
			c.putClaim(o.Name, claimInfo{Provider: o.Spec.ProviderNetwork, R: kubestore.ObservedClaim(o)})
		}
	case *v1alpha1.ProxmoxNetwork:
		c.dropNetwork(key)
		if !gone {
			c.putNetwork(observeNetwork(o))
		}
	case *capiipam.IPAddress:
		c.setAddress(key, poolRefOf(o), gone)
	case *unstructured.Unstructured:
		switch {
		case isMachine(o):
			c.setMachine(key, machinePools(o), gone)
		case isIPAddress(o):
			c.setAddress(key, poolRefOfUnstructured(o), gone)
		}
	}
}

func (c *Cache) putVlan(v vlanInfo) {
	c.vlans[v.Name] = v
	if v.Zone != "" {
		addName(c.vlansByZone, v.Zone, v.Name)
	}
	for _, z := range c.zones {
		if z.alloc != nil {
			z.alloc.Index().ObserveVlan(v.Vlan)
		}
	}
}

func (c *Cache) dropVlan(name string) {
	v, ok := c.vlans[name]
	if !ok {
		return
	}
	delete(c.vlans, name)
	if v.Zone != "" {
		delName(c.vlansByZone, v.Zone, name)
	}
	for _, z := range c.zones {
		if z.alloc != nil {
			z.alloc.Index().ForgetVlan(name)
		}
	}
}

func (c *Cache) putClaim(name string, ci claimInfo) {
	c.claims[name] = ci
	for _, z := range c.zones {
		if z.alloc != nil && z.zone.ProviderNetwork() == ci.Provider {
			z.alloc.Index().ObserveReservation(ci.R)
		}
	}
}

func (c *Cache) dropClaim(name string) {
	ci, ok := c.claims[name]
	if !ok {
		return
	}
	delete(c.claims, name)
	for _, z := range c.zones {
		if z.alloc != nil && z.zone.ProviderNetwork() == ci.Provider {
			z.alloc.Index().ForgetReservation(ci.R.VID)
		}
	}
}

func (c *Cache) putNetwork(n networkInfo) {
	c.networks[n.Key] = n
	addKey(c.byZone, n.Zone, n.Key)
	addKey(c.byNS, n.Key.Namespace, n.Key)
	c.countTriple(n, 1)
	addToList(c.bySubnet, n.Subnet, n.Key)
	addToList(c.byPool, poolKey{n.Key.Namespace, n.Pool}, n.Key)
}

func (c *Cache) dropNetwork(key Key) {
	n, ok := c.networks[key]
	if !ok {
		return
	}
	delete(c.networks, key)
	delKey(c.byZone, n.Zone, key)
	delKey(c.byNS, key.Namespace, key)
	c.countTriple(n, -1)
	delFromList(c.bySubnet, n.Subnet, key)
	delFromList(c.byPool, poolKey{key.Namespace, n.Pool}, key)
}

func (c *Cache) setAddress(key Key, pool string, gone bool) {
	if old, ok := c.addresses[key]; ok {
		delete(c.addresses, key)
		if c.addrCount[old]--; c.addrCount[old] <= 0 {
			delete(c.addrCount, old)
		}
	}
	if gone || pool == "" {
		return
	}
	pk := poolKey{key.Namespace, pool}
	c.addresses[key] = pk
	c.addrCount[pk]++
}

func (c *Cache) setMachine(key Key, pools []string, gone bool) {
	for _, p := range c.machines[key] {
		pk := poolKey{key.Namespace, p}
		if c.machCount[pk]--; c.machCount[pk] <= 0 {
			delete(c.machCount, pk)
		}
	}
	delete(c.machines, key)
	if gone || len(pools) == 0 {
		return
	}
	c.machines[key] = pools
	for _, p := range pools {
		c.machCount[poolKey{key.Namespace, p}]++
	}
}

func addKey[K comparable](m map[K]keySet, k K, v Key) {
	s, ok := m[k]
	if !ok {
		s = keySet{}
		m[k] = s
	}
	s[v] = struct{}{}
}

func delKey[K comparable](m map[K]keySet, k K, v Key) {
	if s, ok := m[k]; ok {
		delete(s, v)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}

func addName(m map[string]map[string]struct{}, k, v string) {
	s, ok := m[k]
	if !ok {
		s = map[string]struct{}{}
		m[k] = s
	}
	s[v] = struct{}{}
}

func delName(m map[string]map[string]struct{}, k, v string) {
	if s, ok := m[k]; ok {
		delete(s, v)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}
