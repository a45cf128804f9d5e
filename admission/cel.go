package admission

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// The CEL of the generated policies. Each fragment states the same rule as
// the Go function named next to it, and the differential test holds them
// to agreement.

// celLabel is the DNS-label class both parsers of the attachment annotations
// enforce (isLabel).
const celLabel = `[a-z0-9]([-a-z0-9]*[a-z0-9])?`

// celForeignNetworks: true when the k8s.v1.cni.cncf.io/networks value v
// names an attachment outside the request's namespace (foreignNetworks).
func celForeignNetworks(v string) string {
	return strings.NewReplacer("{V}", v, "{LABEL}", celLabel).Replace(
		`({V} != '' && ({V}.contains('\\') || ` +
			`({V}.contains('[') || {V}.contains('{') || {V}.contains('"') ` +
			`? {V}.findAll(r'(?i:"namespace")\s*:\s*"[^"]*"').exists(m, !m.matches(r'^(?i:"namespace")\s*:\s*"' + request.namespace + '"$')) ` +
			`: {V}.split(',').exists(e, !e.matches(r'^\s*(' + request.namespace + r'/)?{LABEL}(@{LABEL})?\s*$')))))`)
}

// celForeignDefaultNetwork: true when the v1.multus-cni.io/default-network
// value v is not one attachment qualified with the request's namespace
// (foreignDefaultNetwork).
func celForeignDefaultNetwork(v string) string {
	return strings.NewReplacer("{V}", v, "{LABEL}", celLabel).Replace(
		`!{V}.matches(r'^\s*' + request.namespace + r'/{LABEL}(@{LABEL})?\s*$')`)
}

// celRefusedPin: true when annotation k (value v) pins a Kube-OVN subnet
// other than a default switch of the namespace (isSubnetPin, pinAllowed).
func celRefusedPin(k, v string) string {
	return strings.NewReplacer("{K}", k, "{V}", v).Replace(
		`({K}.endsWith('kubernetes.io/logical_switch') && !({K} == 'ovn.kubernetes.io/logical_switch' && {V} in variables.defaultSwitches))`)
}

// celDefaultSwitches lists the namespace's default Kube-OVN switches
// (defaultSwitches).
const celDefaultSwitches = `namespaceObject != null && has(namespaceObject.metadata.annotations) && ` +
	`'ovn.kubernetes.io/logical_switch' in namespaceObject.metadata.annotations ` +
	`? namespaceObject.metadata.annotations['ovn.kubernetes.io/logical_switch'].split(',') : []`

// celRefusedAnnotations filters the new or changed annotations that reach
// outside the namespace (refusedAnnotations), sorted like the Go validator's
// keys: a CEL map has no order of its own. pins is a CEL condition under
// which subnet pins are judged.
func celRefusedAnnotations(pins string) string {
	const v = "variables.annotations[k]"
	return `variables.annotations.filter(k, ` +
		`!(k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.annotations[k]) && ` +
		`(k == 'k8s.v1.cni.cncf.io/networks' ? ` + celForeignNetworks(v) +
		` : k == 'v1.multus-cni.io/default-network' ? ` + celForeignDefaultNetwork(v) +
		` : ` + pins + ` && ` + celRefusedPin("k", v) + `)).sort()`
}

// celAttachmentMessage composes the refusal of an attachment policy
// (composedAttachmentMessage).
func celAttachmentMessage(static, refused string) string {
	return `'` + static + ` (' + request.namespace + '; a multus default network as ' + request.namespace + '/<name>); refused: ' + (` + refused + `).join(', ')`
}

// celNotPlatformNamespace is the attachment policies' namespace match
// condition (Validator.Exempt).
func celNotPlatformNamespace(exempt []string) string {
	list, _ := json.Marshal(exempt)
	if len(exempt) == 0 {
		list = []byte("[]")
	}
	return `!request.namespace.startsWith('` + platformPrefix + `') && !(request.namespace in ` + string(list) + `)`
}

// Machine binding.

// celPools is the pool references of NIC n: v1alpha1's ipv4PoolRef and
// v1alpha2's ipPoolRef list (decodeNIC).
func celPools(n string) string {
	return strings.ReplaceAll(`((has({N}.ipv4PoolRef) ? [{N}.ipv4PoolRef] : []) + (has({N}.ipPoolRef) ? {N}.ipPoolRef : []))`, "{N}", n)
}

// celTriple is NIC n's entry as the namespace annotation lists it,
// <bridge>/<vlan>/<pool> or, untagged on a zone VNet, <vnet>/<pool>; or ”
// (nic.entry).
func celTriple(n string) string {
	p := celPools(n)
	return strings.NewReplacer("{N}", n, "{P}", p, "{ONVNET}", celOnZoneVNet(n)).Replace(
		`(has({N}.bridge) && size({P}) == 1 && has({P}[0].kind) && {P}[0].kind == 'InClusterIPPool' && has({P}[0].name) ` +
			`? (has({N}.vlan) ? {N}.bridge + '/' + string({N}.vlan) + '/' + {P}[0].name : ({ONVNET} ? {N}.bridge + '/' + {P}[0].name : '')) : '')`)
}

// celOnZoneVNet: NIC n sits on a VNet of a zone in mode VNets, a prefix
// and four digits (Validator.onZoneVNet, vnetid.Match). The prefixes are
// letters and digits, nothing a regular expression reads otherwise.
func celOnZoneVNet(n string) string {
	return `(has(` + n + `.bridge) && variables.zoneVNetPrefixes.exists(p, ` + n + `.bridge.matches('^' + p + '[0-9]{4}$')))`
}

// celBridgeOK: NIC n has no bridge or one capmox.ValidBridge takes, by the
// same regular expression. The size test, in characters, spares the
// expression a long string and refuses nothing it would take.
func celBridgeOK(n string) string {
	return strings.NewReplacer("{N}", n, "{MAX}", strconv.Itoa(capmox.MaxBridgeBytes), "{RE}", capmox.BridgePattern).Replace(
		`(!has({N}.bridge) || (size({N}.bridge) <= {MAX} && {N}.bridge.matches(r'{RE}')))`)
}

// celVLANOK: NIC n has no VLAN or a VLAN ID (capmox.ValidVLAN).
func celVLANOK(n string) string {
	return strings.NewReplacer("{N}", n, "{MIN}", strconv.Itoa(capmox.MinVLAN), "{MAX}", strconv.Itoa(capmox.MaxVLAN)).Replace(
		`(!has({N}.vlan) || ({N}.vlan >= {MIN} && {N}.vlan <= {MAX}))`)
}

// celString is s as a CEL string literal.
func celString(s string) string { return strconv.Quote(s) }

// celOnZoneBridge: NIC n sits on a zone bridge (Validator.onZoneBridge).
func celOnZoneBridge(n string) string {
	return `(has(` + n + `.bridge) && ` + n + `.bridge in variables.zoneBridges)`
}

func celList[T any](items []T) string {
	if len(items) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(items)
	return string(b)
}
