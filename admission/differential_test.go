package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// ownToken stands for the request's namespace in generated values; it is
// replaced once the case's namespace is known.
const ownToken = "OWNNS"

// genNamespace draws where a case lands: a tenant namespace (with or
// without Proxmox networks and default switches), or one of the platform's
// and the configured exempt namespaces.
type genNS struct {
	kind     string
	networks *string
	switches *string
}

var triplesVocab = []string{"vmbr70/101/subnet-a", "vmbr80/5/subnet-c", "vmbr9/12/subnet-b", "vmbr70/102/subnet-b",
	"pxa0101/subnet-a", "pxp0005/subnet-c", "pxa0102/subnet-b"}

func drawNamespace(t *rapid.T) genNS {
	g := genNS{kind: rapid.SampledFrom([]string{"tenant", "tenant", "tenant", "tenant", "cozy", "exempt", "kube-system", "px-egress", DefaultReleaseNamespace}).Draw(t, "ns")}
	if g.kind != "tenant" {
		return g
	}
	if rapid.Bool().Draw(t, "owns") {
		var picked []string
		for i, tr := range triplesVocab {
			if rapid.Bool().Draw(t, fmt.Sprintf("triple%d", i)) {
				picked = append(picked, tr)
			}
		}
		s := strings.Join(picked, ",")
		g.networks = &s
	}
	if rapid.Bool().Draw(t, "hasSwitches") {
		s := rapid.SampledFrom([]string{"ovn-default", "ovn-default,subnet-x", ""}).Draw(t, "switches")
		g.switches = &s
	}
	return g
}

// place creates the case's namespace and returns it.
func (e *apiEnv) place(ctx context.Context, g genNS) *Namespace {
	switch g.kind {
	case "tenant":
		a := map[string]string{}
		if g.networks != nil {
			a[AnnotationProxmoxNetworks] = *g.networks
		}
		if g.switches != nil {
			a[AnnotationLogicalSwitch] = *g.switches
		}
		name := e.namespace(ctx, "tenant", a)
		return &Namespace{Name: name, Annotations: a}
	case "cozy":
		return &Namespace{Name: e.namespace(ctx, "cozy-gen", nil)}
	case "exempt":
		name := e.exempt[0]
		e.exempt = e.exempt[1:]
		e.createNamespace(ctx, name, nil)
		return &Namespace{Name: name}
	}
	e.shared(ctx, g.kind)
	return &Namespace{Name: g.kind}
}

// Machines.

var (
	// pxa0101, pxa0102 and pxp0005 are VNets of the zones; pxb0101 and
	// pxa101 are named like them but are not.
	bridgeVocab = []string{"vmbr70", "vmbr80", "vmbr0", "vmbr1", "vmbr9", "pxa0101", "pxa0102", "pxp0005", "pxb0101", "pxa101"}
	// hostileBridges are what capmox would write into net0 as settings of
	// their own (a tag, another key), or no interface name: empty, too
	// long, with spaces, a newline (whose message the API server drops for
	// the static one) or a byte outside the name's class; the 15-byte name
	// is the one of them that passes.
	hostileBridges = []string{"vmbr70,tag=102", "pxa0102,", "vmbr0 ", " vmbr9", "vmbr0=1", "", "vmbr0123456789ab", "vmbr0123456789a",
		"pxa0101,tag=70", "vmbr1,firewall=0", "vmbr9\n", "vmbr9\tx", "vm/br9", "vmbr9:1", "vmbr\u00e9", "0vmbr", "-vmbr9", "pxa0101\n"}
	// vlanVocab: noVLAN leaves vlan out.
	vlanVocab = []int{noVLAN, noVLAN, 70, 80, 101, 102, 5, 12}
	// hostileVLANs are outside 1-4094, but for the edges 1 and 4094.
	hostileVLANs = []int{0, -1, 4095, 4096, 65535, 1, 4094}
	poolVocab    = []string{"", "subnet-a", "subnet-b", "subnet-c"}
)

// noVLAN stands for a NIC without vlan.
const noVLAN = -1 << 20

// drawBridge draws a NIC's bridge, one time in six a hostile one (of
// hostileBridges, or any string of a few bytes that net0 or a shell reads).
func drawBridge(t *rapid.T, i int) string {
	if rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("hostileBridge%d", i)) > 0 {
		return rapid.SampledFrom(bridgeVocab).Draw(t, fmt.Sprintf("bridge%d", i))
	}
	if rapid.Bool().Draw(t, fmt.Sprintf("randomBridge%d", i)) {
		return rapid.StringMatching(`[a-z0-9,=;:./_ -]{0,17}`).Draw(t, fmt.Sprintf("bridge%d", i))
	}
	return rapid.SampledFrom(hostileBridges).Draw(t, fmt.Sprintf("bridge%d", i))
}

// drawVLAN sets n's vlan, or leaves it out, one time in eight from
// hostileVLANs.
func drawVLAN(t *rapid.T, i int, n m) {
	vocab := vlanVocab
	if rapid.IntRange(0, 7).Draw(t, fmt.Sprintf("hostileVLAN%d", i)) == 0 {
		vocab = hostileVLANs
	}
	if v := rapid.SampledFrom(vocab).Draw(t, fmt.Sprintf("vlan%d", i)); v != noVLAN {
		n["vlan"] = v
	}
}

func drawPoolRef(t *rapid.T, label string) m {
	kind := rapid.SampledFrom([]string{"InClusterIPPool", "InClusterIPPool", "GlobalInClusterIPPool"}).Draw(t, label+"kind")
	return m{"apiGroup": "ipam.cluster.x-k8s.io", "kind": kind, "name": rapid.SampledFrom(poolVocab[1:]).Draw(t, label+"name")}
}

// drawListed draws, one time in two, a NIC as a namespace lists it: the
// bridge, VLAN (0 for a VNet) and InClusterIPPool of an entry the case's
// namespace lists, or of triplesVocab when it lists none, so that machines
// on a tenant's own networks and VNets are often admitted, not only
// refused.
func drawListed(t *rapid.T, i int, g genNS) (bridge string, vlan int, pool string, ok bool) {
	if rapid.Bool().Draw(t, fmt.Sprintf("listed%d", i)) {
		return "", 0, "", false
	}
	entries := triplesVocab
	if g.networks != nil && *g.networks != "" {
		entries = strings.Split(*g.networks, ",")
	}
	parts := strings.Split(rapid.SampledFrom(entries).Draw(t, fmt.Sprintf("entry%d", i)), "/")
	if len(parts) == 2 {
		return parts[0], 0, parts[1], true
	}
	vlan, _ = strconv.Atoi(parts[1])
	return parts[0], vlan, parts[2], true
}

func listedNIC(bridge string, vlan int) m {
	n := m{"bridge": bridge}
	if vlan != 0 {
		n["vlan"] = vlan
	}
	return n
}

func drawNICv1(t *rapid.T, g genNS, i int, additional bool) m {
	if bridge, vlan, pool, ok := drawListed(t, i, g); ok {
		n := listedNIC(bridge, vlan)
		n["ipv4PoolRef"] = poolRef(pool)
		if additional {
			n["name"] = fmt.Sprintf("net%d", i)
		}
		return n
	}
	n := m{"bridge": drawBridge(t, i)}
	drawVLAN(t, i, n)
	if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("pool%d", i)) > 0 {
		n["ipv4PoolRef"] = drawPoolRef(t, fmt.Sprintf("p%d", i))
	} else if additional {
		// capmox requires a pool on additional devices; an IPv6 one names
		// no Proxmox network.
		n["ipv6PoolRef"] = m{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "subnet-v6"}
	}
	if additional {
		n["name"] = fmt.Sprintf("net%d", i)
	}
	return n
}

func drawNICv2(t *rapid.T, g genNS, name string, i int) m {
	if bridge, vlan, pool, ok := drawListed(t, i, g); ok {
		n := listedNIC(bridge, vlan)
		n["name"], n["ipPoolRef"] = name, l{poolRef(pool)}
		return n
	}
	n := m{"name": name}
	if rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("hasBridge%d", i)) > 0 {
		n["bridge"] = drawBridge(t, i)
	}
	drawVLAN(t, i, n)
	var refs l
	for j := range rapid.SampledFrom([]int{0, 1, 1, 1, 2}).Draw(t, fmt.Sprintf("pools%d", i)) {
		refs = append(refs, drawPoolRef(t, fmt.Sprintf("p%d.%d", i, j)))
	}
	if refs != nil {
		n["ipPoolRef"] = refs
	}
	return n
}

// drawMachine draws a machine or template for namespace g.
func drawMachine(t *rapid.T, g genNS) (m, input) {
	v2 := rapid.Bool().Draw(t, "v1alpha2")
	count := rapid.IntRange(0, 3).Draw(t, "nics")
	var obj m
	kind := gvkMachineV1
	if v2 {
		kind = gvkMachineV2
		first := rapid.SampledFrom([]int{0, 0, 0, 1}).Draw(t, "firstName")
		var ds []m
		for i := 0; i < count; i++ {
			ds = append(ds, drawNICv2(t, g, fmt.Sprintf("net%d", first+i), i))
		}
		obj = machineV2(ds...)
	} else {
		var def m
		if count > 0 && rapid.IntRange(0, 4).Draw(t, "hasDefault") > 0 {
			def = drawNICv1(t, g, 0, false)
		}
		network := m{}
		if def != nil {
			network["default"] = def
		}
		var adds l
		for i := 1; i < count; i++ {
			adds = append(adds, drawNICv1(t, g, i, true))
		}
		if adds != nil {
			network["additionalDevices"] = adds
		}
		obj = machineV1(nil)
		obj["spec"].(m)["network"] = network
	}
	if rapid.IntRange(0, 3).Draw(t, "template") == 0 {
		obj = template(obj)
		kind.Kind = KindTemplate
	}
	return obj, input{op: OperationCreate, kind: kind}
}

// nicValuesHold: every NIC of an admitted machine or template has a bridge
// capmox can write into net0 as it is, and a VLAN ID, if any.
func nicValuesHold(in input) error {
	b, err := json.Marshal(in.obj)
	if err != nil {
		return err
	}
	o, err := decodeObject(b)
	if err != nil {
		return err
	}
	nics, _, err := machineNICs(in.kind.Kind, o)
	if err != nil {
		return err
	}
	for _, n := range nics {
		if n.hasBridge && !capmox.ValidBridge(n.bridge) {
			return fmt.Errorf("a NIC on bridge %q", n.bridge)
		}
		if n.hasVLAN && !capmox.ValidVLAN(n.vlan) {
			return fmt.Errorf("a NIC with VLAN %d", n.vlan)
		}
	}
	return nil
}

// Attachments.

var (
	networksVocab = []string{"", "net", ownToken + "/net", "tenant-x/net", "net,tenant-x/n", " " + ownToken + "/a@eth1 ",
		`[{"name":"a","namespace":"` + ownToken + `"}]`, `[{"name":"a","namespace":"tenant-x"}]`, `[{"name":"a","NameSpace":"tenant-x"}]`,
		`[{"name":"a"}]`, "a / b", ",", `{"name":"x","namespace":"` + ownToken + `"}`, `[{"name":"a","n\u0061mespace":"tenant-x"}]`,
		"net,\ntenant-x/b", ownToken + "/Net"}
	defaultVocab = []string{ownToken + "/net", "net", "tenant-x/net", ownToken + "/net@eth0", " " + ownToken + "/net\t", `{"name":"net"}`, ownToken + "/a/b"}
	pinVocab     = []string{"ovn-default", "subnet-x", "ovn-default,subnet-x", ""}
	multusVocab  = []string{"net", ownToken + "/net", ownToken + "/net2", "tenant-x/net", "tenant-x/a", ownToken + "/a/b", "kube-system/net", "x/" + ownToken}
)

func drawAnnotations(t *rapid.T, label string) map[string]string {
	a := map[string]string{}
	if rapid.Bool().Draw(t, label+"hasNetworks") {
		if rapid.IntRange(0, 4).Draw(t, label+"randomNetworks") == 0 {
			a[AnnotationNetworks] = rapid.StringMatching(`[a-z0-9OWNS/ ,@"{}\[\]:\\-]{0,24}`).Draw(t, label+"networks")
		} else {
			a[AnnotationNetworks] = rapid.SampledFrom(networksVocab).Draw(t, label+"networks")
		}
	}
	if rapid.Bool().Draw(t, label+"hasDefault") {
		a[AnnotationDefaultNetwork] = rapid.SampledFrom(defaultVocab).Draw(t, label+"default")
	}
	if rapid.Bool().Draw(t, label+"hasPin") {
		a[AnnotationLogicalSwitch] = rapid.SampledFrom(pinVocab).Draw(t, label+"pin")
	}
	if rapid.IntRange(0, 3).Draw(t, label+"hasProviderPin") == 0 {
		a["net1."+ownToken+".ovn.kubernetes.io/logical_switch"] = rapid.SampledFrom(pinVocab).Draw(t, label+"providerPin")
	}
	if rapid.Bool().Draw(t, label+"hasOther") {
		a["example.com/note"] = "x"
	}
	return a
}

func drawNetworks(t *rapid.T, label string) l {
	var out l
	for i := range rapid.IntRange(0, 3).Draw(t, label+"networks") {
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("%spod%d", label, i)) == 0 {
			out = append(out, m{"name": fmt.Sprintf("n%d", i), "pod": m{}})
			continue
		}
		mu := m{"networkName": rapid.SampledFrom(multusVocab).Draw(t, fmt.Sprintf("%smultus%d", label, i))}
		if d := rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("%sdefault%d", label, i)); d > 0 {
			mu["default"] = d == 2
		}
		out = append(out, m{"name": fmt.Sprintf("n%d", i), "multus": mu})
	}
	return out
}

// drawUpdate decides between CREATE and UPDATE, and for UPDATE whether the
// old object keeps each part of the new one.
func drawUpdate(t *rapid.T) (update, gone bool) {
	update = rapid.IntRange(0, 2).Draw(t, "update") > 0
	return update, update && rapid.IntRange(0, 9).Draw(t, "deleting") == 0
}

func keepSome(t *rapid.T, label string, a map[string]string) map[string]string {
	out := map[string]string{}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if rapid.Bool().Draw(t, label+k) {
			out[k] = a[k]
		}
	}
	return out
}

func drawVM(t *rapid.T) (m, input) {
	isVM := rapid.Bool().Draw(t, "vm")
	build, kind := vmi, gvkVMI
	if isVM {
		build, kind = vm, gvkVM
	}
	nets, ann := drawNetworks(t, ""), drawAnnotations(t, "")
	obj := build(nets, ann)
	update, gone := drawUpdate(t)
	if !update {
		return obj, input{op: OperationCreate, kind: kind}
	}
	var oldNets l
	for i, n := range nets {
		if rapid.Bool().Draw(t, fmt.Sprintf("keepNet%d", i)) {
			oldNets = append(oldNets, n)
		}
	}
	old := build(append(oldNets, drawNetworks(t, "old")...), keepSome(t, "keepAnn", ann))
	if gone {
		obj = deleting(obj)
	}
	return obj, input{op: OperationUpdate, kind: kind, old: old}
}

func drawPod(t *rapid.T) (m, input) {
	a := drawAnnotations(t, "")
	obj := pod(a)
	update, gone := drawUpdate(t)
	if !update {
		return obj, input{op: OperationCreate, kind: gvkPod}
	}
	old := keepSome(t, "keep", a)
	for k, v := range drawAnnotations(t, "old") {
		if _, ok := old[k]; !ok {
			old[k] = v
		}
	}
	if gone {
		obj = deleting(obj)
	}
	return obj, input{op: OperationUpdate, kind: gvkPod, old: pod(old)}
}

// own replaces ownToken with the namespace name in an object.
func own(o m, ns string) m {
	if o == nil {
		return nil
	}
	b, _ := json.Marshal(o)
	var out m
	_ = json.Unmarshal([]byte(strings.ReplaceAll(string(b), ownToken, ns)), &out)
	out["metadata"].(m)["namespace"] = ns
	return out
}

// differential draws cases with draw, for the namespace drawn first, and
// requires the Go validator and the generated policies in the API server
// to agree on each, and what the API server admits to hold invariant (nil:
// nothing more).
func (e *apiEnv) differential(t *testing.T, draw func(*rapid.T, genNS) (m, input), invariant func(input) error, count map[bool]int) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		g := drawNamespace(rt)
		obj, in := draw(rt, g)
		ns := e.place(ctx, g)
		in.ns = ns
		in.obj = own(obj, ns.Name)
		in.old = own(in.old, ns.Name)
		d, err := e.v.Review(in.request(rt), in.ns)
		if err != nil {
			rt.Fatalf("Go validator: %v", err)
		}
		a, err := e.submit(ctx, in)
		if err != nil {
			rt.Fatalf("API server: %v\nobject %s", err, js(rt, in.obj))
		}
		if !agree(d, a) {
			rt.Fatalf("Go says %+v, the API server %+v\nnamespace %+v\nobject %s\nold %s", d, a, in.ns, js(rt, in.obj), js(rt, in.old))
		}
		if a.allowed && invariant != nil {
			if err := invariant(in); err != nil {
				rt.Fatalf("the API server admits what it must not: %v\nnamespace %+v\nobject %s", err, in.ns, js(rt, in.obj))
			}
		}
		count[d.Allowed]++
	})
	if count[true] < 10 || count[false] < 10 {
		t.Errorf("the generator is lopsided: %d admitted, %d refused", count[true], count[false])
	}
}

// anyNS is a draw that does not depend on the namespace.
func anyNS(draw func(*rapid.T) (m, input)) func(*rapid.T, genNS) (m, input) {
	return func(t *rapid.T, _ genNS) (m, input) { return draw(t) }
}

// TestAgainstAPIServer runs the policies in a real kube-apiserver: every
// table pair, then generated machines, VMs and pods, each compared with the
// Go validator; then the webhook over TLS in place of the policies.
func TestAgainstAPIServer(t *testing.T) {
	e := startAPIEnv(t)
	ctx := context.Background()
	e.installPolicies(ctx)
	t.Run("Pairs", func(t *testing.T) {
		cases := allPairCases()
		names := make([]string, 0, len(cases))
		for n := range cases {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			e.check(ctx, t, n+"/refused", e.rename(ctx, cases[n].refused))
			e.check(ctx, t, n+"/admitted", e.rename(ctx, cases[n].admitted))
		}
	})
	for _, g := range []struct {
		name      string
		draw      func(*rapid.T, genNS) (m, input)
		invariant func(input) error
	}{{"Machines", drawMachine, nicValuesHold}, {"VMs", anyNS(drawVM), nil}, {"Pods", anyNS(drawPod), nil}, {"Applications", anyNS(drawImmutable), nil}} {
		t.Run(g.name, func(t *testing.T) {
			count := map[bool]int{}
			e.differential(t, g.draw, g.invariant, count)
			t.Logf("%d generated requests agreed: %d admitted, %d refused", count[true]+count[false], count[true], count[false])
		})
	}
	t.Run("RefusedKeysInOrder", func(t *testing.T) {
		// Three refused annotations: the message lists them by key, every
		// time, however the API server iterates the map; the last value
		// ends with a space, which the API server trims from the message.
		in := e.rename(ctx, input{kind: gvkPod, ns: owning(), obj: pod(map[string]string{
			AnnotationNetworks:                 "tenant-b/x",
			AnnotationDefaultNetwork:           "tenant-b/y ",
			"ovn.kubernetes.io/logical_switch": "subnet-b",
		})})
		for i := range 12 {
			e.check(ctx, t, fmt.Sprintf("try %d", i), in)
		}
	})
	t.Run("WebhookOverTLS", func(t *testing.T) { e.webhookRoundTrip(ctx, t) })
}
