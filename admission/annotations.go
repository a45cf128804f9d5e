package admission

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/samber/lo"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Annotation keys the policies read.
const (
	// AnnotationNetworks is Multus's list of attachments:
	// comma-separated [<namespace>/]<name>[@<ifname>] entries, or JSON.
	AnnotationNetworks = "k8s.v1.cni.cncf.io/networks"
	// AnnotationDefaultNetwork replaces a pod's primary network.
	AnnotationDefaultNetwork = "v1.multus-cni.io/default-network"
	// AnnotationLogicalSwitch pins a pod's primary NIC to a Kube-OVN subnet;
	// on a Namespace it lists the namespace's default switches.
	AnnotationLogicalSwitch = "ovn.kubernetes.io/logical_switch"
	// logicalSwitchSuffix ends every Kube-OVN switch pin,
	// <provider>.kubernetes.io/logical_switch included.
	logicalSwitchSuffix = "kubernetes.io/logical_switch"
	// AnnotationProxmoxNetworks on a Namespace lists its ready Proxmox
	// networks as sorted, comma-separated <bridge>/<vlan>/<pool> triples,
	// and a <vnet>/<pool> entry for each network with a Proxmox SDN VNet.
	AnnotationProxmoxNetworks = "proxmox.cozystack.io/networks"
)

// Form is how a k8s.v1.cni.cncf.io/networks value is written.
type Form int

// The two forms Multus and Kube-OVN read.
const (
	FormComma Form = iota
	FormJSON
)

// NetworkRef is one attachment of the comma form.
type NetworkRef struct {
	// Namespace is empty when the entry is unqualified: it then names the
	// object's own namespace.
	Namespace string
	Name      string
	Interface string
}

// String writes the entry back in the comma form.
func (r NetworkRef) String() string {
	s := r.Name
	if r.Namespace != "" {
		s = r.Namespace + "/" + s
	}
	if r.Interface != "" {
		s += "@" + r.Interface
	}
	return s
}

// NetworkSelection is a parsed k8s.v1.cni.cncf.io/networks value.
type NetworkSelection struct {
	Form Form
	// Entries of the comma form.
	Entries []NetworkRef
	// Namespaces of the JSON form: the value of every "namespace" key,
	// matched case-insensitively as Go's JSON decoder does, at any depth.
	Namespaces []string
}

// Parse errors of the attachment annotations.
var (
	// ErrBackslash: JSON keys can be spelled with \u escapes, which a scan
	// cannot see through; no name involved needs a backslash.
	ErrBackslash = errors.New("a backslash is not allowed")
	// ErrNotQualified: a default network must be <namespace>/<name>,
	// because Multus and Kube-OVN resolve an unqualified one differently.
	ErrNotQualified = errors.New("not qualified with a namespace")
)

// EntryError is a comma-form entry outside the grammar
// [<namespace>/]<name>[@<ifname>], each part a DNS label.
type EntryError struct {
	Index int
	Entry string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("entry %d %s is not [<namespace>/]<name>[@<interface>] with DNS labels", e.Index, termsafe.Quote(e.Entry))
}

// jsonNamespaceKey finds every "namespace": "<value>" pair of a JSON value.
var jsonNamespaceKey = regexp.MustCompile(`(?i:"namespace")\s*:\s*"([^"]*)"`)

// ParseNetworks reads a k8s.v1.cni.cncf.io/networks value. An empty value
// selects nothing. A value with any of [ { " is JSON; its namespaces are
// found by scanning for "namespace" keys, which also sees through invalid
// JSON. Otherwise it is the comma form, and every entry must be in the
// grammar; anything looser (spaces around the slash, empty entries) is an
// error rather than a guess.
func ParseNetworks(v string) (NetworkSelection, error) {
	if v == "" {
		return NetworkSelection{}, nil
	}
	if strings.Contains(v, `\`) {
		return NetworkSelection{}, ErrBackslash
	}
	if strings.ContainsAny(v, `[{"`) {
		sel := NetworkSelection{Form: FormJSON}
		for _, m := range jsonNamespaceKey.FindAllStringSubmatch(v, -1) {
			sel.Namespaces = append(sel.Namespaces, m[1])
		}
		return sel, nil
	}
	sel := NetworkSelection{Form: FormComma}
	for i, e := range strings.Split(v, ",") {
		ref, ok := parseRef(trimRE2Space(e), false)
		if !ok {
			return NetworkSelection{}, &EntryError{Index: i, Entry: e}
		}
		sel.Entries = append(sel.Entries, ref)
	}
	return sel, nil
}

// Foreign reports whether the selection names a namespace other than ns.
func (s NetworkSelection) Foreign(ns string) bool {
	for _, e := range s.Entries {
		if e.Namespace != "" && e.Namespace != ns {
			return true
		}
	}
	for _, n := range s.Namespaces {
		if n != ns {
			return true
		}
	}
	return false
}

// ParseDefaultNetwork reads a v1.multus-cni.io/default-network value, which
// must be exactly <namespace>/<name>[@<ifname>].
func ParseDefaultNetwork(v string) (NetworkRef, error) {
	ref, ok := parseRef(trimRE2Space(v), true)
	if !ok {
		if !strings.Contains(v, "/") {
			return NetworkRef{}, errorf("default network %q: %w", v, ErrNotQualified)
		}
		return NetworkRef{}, &EntryError{Entry: v}
	}
	return ref, nil
}

// foreignNetworks: the value names an attachment outside ns, or cannot be
// read safely.
func foreignNetworks(v, ns string) bool {
	sel, err := ParseNetworks(v)
	return err != nil || sel.Foreign(ns)
}

// foreignDefaultNetwork: the value is not one attachment qualified with ns.
func foreignDefaultNetwork(v, ns string) bool {
	ref, err := ParseDefaultNetwork(v)
	return err != nil || ref.Namespace != ns
}

// isSubnetPin reports whether an annotation key pins a Kube-OVN subnet.
func isSubnetPin(key string) bool { return strings.HasSuffix(key, logicalSwitchSuffix) }

// pinAllowed: only ovn.kubernetes.io/logical_switch naming one of the
// namespace's own default switches, which Kube-OVN would pick anyway.
func pinAllowed(key, value string, defaultSwitches []string) bool {
	if key != AnnotationLogicalSwitch {
		return false
	}
	for _, s := range defaultSwitches {
		if s == value {
			return true
		}
	}
	return false
}

// parseRef reads [<namespace>/]<name>[@<ifname>]; qualified requires the
// namespace.
func parseRef(s string, qualified bool) (NetworkRef, bool) {
	var r NetworkRef
	if i := strings.IndexByte(s, '/'); i >= 0 {
		r.Namespace, s = s[:i], s[i+1:]
		if !isLabel(r.Namespace) {
			return NetworkRef{}, false
		}
	} else if qualified {
		return NetworkRef{}, false
	}
	if i := strings.IndexByte(s, '@'); i >= 0 {
		r.Interface, s = s[i+1:], s[:i]
		if !isLabel(r.Interface) {
			return NetworkRef{}, false
		}
	}
	r.Name = s
	return r, isLabel(r.Name)
}

// isLabel: [a-z0-9]([-a-z0-9]*[a-z0-9])?, with no length limit, exactly the
// class the policies' CEL uses.
func isLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// trimRE2Space trims what RE2's \s matches: tab, newline, form feed,
// carriage return and space.
func trimRE2Space(s string) string { return strings.Trim(s, "\t\n\f\r ") }

// Triple is one Proxmox network of a namespace: the bridge and VLAN a NIC
// uses and the InClusterIPPool its address comes from. When the network's
// zone gives its VLAN a Proxmox SDN VNet, the namespace also lists the
// network as VNet and pool, with no Bridge or VLAN: a NIC on a VNet names
// it as its bridge and carries no tag.
type Triple struct {
	Bridge string
	VLAN   int
	Pool   string
	// VNet is set on a <vnet>/<pool> entry, and only there.
	VNet string
}

// String writes the entry: <bridge>/<vlan>/<pool>, or <vnet>/<pool>.
func (t Triple) String() string {
	if t.VNet != "" {
		return t.VNet + "/" + t.Pool
	}
	return t.Bridge + "/" + strconv.Itoa(t.VLAN) + "/" + t.Pool
}

// vnetIDRe is pve-network's VNet ID (pve-sdn-vnet-id): 2 to 8 letters and
// digits, starting with a letter.
var vnetIDRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]{1,7}$`)

// ParseTriples reads a proxmox.cozystack.io/networks value: comma-separated
// <bridge>/<vlan>/<pool> triples and <vnet>/<pool> entries. An empty value
// is no network. An entry that could be read two ways is refused: a
// <vnet>/<pool> whose pool is a number reads as a <bridge>/<vlan> without
// its pool.
func ParseTriples(v string) ([]Triple, error) {
	if v == "" {
		return nil, nil
	}
	var out []Triple
	for i, e := range strings.Split(v, ",") {
		t, err := parseEntry(i, e)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseEntry(i int, e string) (Triple, error) {
	parts := strings.Split(e, "/")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		if !vnetIDRe.MatchString(parts[0]) {
			return Triple{}, errorf("entry %d %q: VNet %q is not a Proxmox SDN VNet ID (2-8 letters and digits, starting with a letter)", i, e, parts[0])
		}
		if _, err := strconv.Atoi(parts[1]); err == nil || strings.Trim(parts[1], "0123456789") == "" {
			return Triple{}, errorf("entry %d %q is ambiguous: read as <vnet>/<pool> its pool %q is a number, read as <bridge>/<vlan> it lacks its pool; "+
				"write <bridge>/<vlan>/<pool>, or <vnet>/<pool> with the pool's name", i, e, parts[1])
		}
		return Triple{VNet: parts[0], Pool: parts[1]}, nil
	case len(parts) == 3 && parts[0] != "" && parts[2] != "":
		vlan, err := strconv.Atoi(parts[1])
		if err != nil || vlan < 1 || vlan > 4094 || strconv.Itoa(vlan) != parts[1] {
			return Triple{}, errorf("entry %d %q: VLAN %q is not a VLAN ID (1-4094)", i, e, parts[1])
		}
		return Triple{Bridge: parts[0], VLAN: vlan, Pool: parts[2]}, nil
	}
	return Triple{}, errorf("entry %d %q is not <bridge>/<vlan>/<pool> or <vnet>/<pool>", i, e)
}

// FormatTriples writes triples as the namespace annotation expects them:
// sorted, without duplicates, comma-separated.
func FormatTriples(ts []Triple) string {
	s := lo.Map(ts, func(t Triple, _ int) string { return t.String() })
	sort.Strings(s)
	return strings.Join(uniq(s), ",")
}

// errorf is fmt.Errorf whose %q quotes a string as termsafe.Quote does:
// an annotation's entry is named in the refusal, never echoed whole.
func errorf(format string, args ...any) error {
	return fmt.Errorf(format, termsafe.QuoteArgs(args...)...)
}
