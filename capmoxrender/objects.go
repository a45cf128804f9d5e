package capmoxrender

import (
	"context"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Objects is an in-memory SubstrateLookup and NetworkLookup over a list of
// live objects, such as the file given to --lookup. It keeps real state:
// Add replaces an object with the same kind, namespace and name. Err, when
// set, is returned by every lookup (to test lookup failures). Objects are
// indexed by group, kind, namespace and name: Add and every lookup take
// the same time however many objects there are.
type Objects struct {
	items []*unstructured.Unstructured
	index map[objectKey]int // into items
	Err   error
}

// objectKey is what tells two objects apart.
type objectKey struct{ group, kind, namespace, name string }

func keyOf(u *unstructured.Unstructured) objectKey {
	gk := u.GroupVersionKind().GroupKind()
	return objectKey{gk.Group, gk.Kind, u.GetNamespace(), u.GetName()}
}

var (
	_ SubstrateLookup = (*Objects)(nil)
	_ NetworkLookup   = (*Objects)(nil)
	_ ClusterLookup   = (*Objects)(nil)
)

// ReadObjects reads YAML or JSON documents (separated by ---), each an
// object or a List whose items are objects. Every document is read: a
// syntax error in any of them is refused, naming the document. It reads r
// to its end: the caller bounds r (io.LimitReader, or a file read with a
// cap, as the CLI reads every input up to --max-input-size).
func ReadObjects(r io.Reader) (*Objects, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("cannot read the lookup objects: %w", err)
	}
	return ReadObjectsBytes(data)
}

// ReadObjectsBytes is ReadObjects over a byte slice. An object given twice
// (the same group, kind, namespace and name) is refused, naming both
// places: which of the two is live cannot be told, and keeping either
// would drop the other without a word.
func ReadObjectsBytes(b []byte) (*Objects, error) {
	docs, err := strictyaml.Documents(b)
	if err != nil {
		return nil, fmt.Errorf("cannot read the lookup objects: %w: %w", ErrInput, err)
	}
	o := &Objects{}
	seen := map[objectKey]string{}
	add := func(u *unstructured.Unstructured, at string) error {
		k := keyOf(u)
		if first, ok := seen[k]; ok {
			return errorf("cannot read the lookup objects: %w: %s %q is in %s and again in %s: an object may be given once; remove one of the two",
				ErrInput, termsafe.Cut(k.kind), k.namespace+"/"+k.name, first, at)
		}
		seen[k] = at
		o.Add(u)
		return nil
	}
	for _, d := range docs {
		var m map[string]any
		if err := strictyaml.UnmarshalJSON(d.JSON, &m); err != nil {
			return nil, fmt.Errorf("cannot read lookup document %d: %w: %w", d.Index, ErrInput, err)
		}
		u := &unstructured.Unstructured{Object: m}
		at := fmt.Sprintf("document %d (line %d)", d.Index, d.Line)
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("cannot read lookup list %d: %w: %w", d.Index, ErrInput, err)
			}
			for j := range l.Items {
				if err := add(&l.Items[j], fmt.Sprintf("item %d of the List in %s", j+1, at)); err != nil {
					return nil, err
				}
			}
			continue
		}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("cannot read lookup document %d: %w: an object needs kind and metadata.name", d.Index, ErrInput)
		}
		if err := add(u, at); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// Items returns the objects in the order they were read.
func (o *Objects) Items() []*unstructured.Unstructured { return o.items }

// Add stores u, replacing an object of the same group, kind, namespace and name.
func (o *Objects) Add(u *unstructured.Unstructured) {
	if o.index == nil {
		o.index = map[objectKey]int{}
	}
	k := keyOf(u)
	if i, ok := o.index[k]; ok {
		o.items[i] = u
		return
	}
	o.index[k] = len(o.items)
	o.items = append(o.items, u)
}

// Delete removes the object of group and kind named namespace/name.
func (o *Objects) Delete(group, kind, namespace, name string) {
	k := objectKey{group, kind, namespace, name}
	i, ok := o.index[k]
	if !ok {
		return
	}
	delete(o.index, k)
	o.items = append(o.items[:i], o.items[i+1:]...)
	for j := i; j < len(o.items); j++ {
		o.index[keyOf(o.items[j])] = j
	}
}

func (o *Objects) get(group, kind, namespace, name string) *unstructured.Unstructured {
	if i, ok := o.index[objectKey{group, kind, namespace, name}]; ok {
		return o.items[i]
	}
	return nil
}

// ClusterInfrastructureKind implements SubstrateLookup for any served
// version of cluster.x-k8s.io Cluster.
func (o *Objects) ClusterInfrastructureKind(_ context.Context, namespace, name string) (string, bool, error) {
	if o.Err != nil {
		return "", false, o.Err
	}
	u := o.get("cluster.x-k8s.io", "Cluster", namespace, name)
	if u == nil {
		return "", false, nil
	}
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "infrastructureRef", "kind")
	return kind, true, nil
}

// KubernetesVersion implements ClusterLookup over apps.cozystack.io
// Kubernetes objects.
func (o *Objects) KubernetesVersion(_ context.Context, namespace, name string) (string, bool, error) {
	if o.Err != nil {
		return "", false, o.Err
	}
	u := o.get("apps.cozystack.io", "Kubernetes", namespace, name)
	if u == nil {
		return "", false, nil
	}
	v, _, _ := unstructured.NestedString(u.Object, "spec", "version")
	return v, true, nil
}

// AllowedNodes implements ClusterLookup over apps.cozystack.io Kubernetes
// objects.
func (o *Objects) AllowedNodes(_ context.Context, namespace, name string) ([]string, bool, error) {
	if o.Err != nil {
		return nil, false, o.Err
	}
	u := o.get("apps.cozystack.io", "Kubernetes", namespace, name)
	if u == nil {
		return nil, false, nil
	}
	nodes, _, err := unstructured.NestedStringSlice(u.Object, "spec", "proxmox", "allowedNodes")
	if err != nil {
		return nil, true, fmt.Errorf("Kubernetes %s/%s spec.proxmox.allowedNodes: %w", namespace, name, err)
	}
	return nodes, true, nil
}

// LoadBalancerAddress implements ClusterLookup over core Services.
func (o *Objects) LoadBalancerAddress(_ context.Context, namespace, name string) (string, bool, error) {
	if o.Err != nil {
		return "", false, o.Err
	}
	u := o.get("", "Service", namespace, name)
	if u == nil {
		return "", false, nil
	}
	ingress, _, _ := unstructured.NestedSlice(u.Object, "status", "loadBalancer", "ingress")
	for _, i := range ingress {
		if m, ok := i.(map[string]any); ok {
			if ip, _ := m["ip"].(string); ip != "" {
				return ip, true, nil
			}
		}
	}
	return "", true, nil
}

// MachineDeploymentInfrastructureKind implements SubstrateLookup.
func (o *Objects) MachineDeploymentInfrastructureKind(_ context.Context, namespace, name string) (string, bool, error) {
	if o.Err != nil {
		return "", false, o.Err
	}
	u := o.get("cluster.x-k8s.io", "MachineDeployment", namespace, name)
	if u == nil {
		return "", false, nil
	}
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "template", "spec", "infrastructureRef", "kind")
	return kind, true, nil
}

// ProxmoxNetwork implements NetworkLookup over proxmox.cozystack.io ProxmoxNetwork objects.
func (o *Objects) ProxmoxNetwork(_ context.Context, namespace, name string) (ProxmoxNetwork, bool, error) {
	if o.Err != nil {
		return ProxmoxNetwork{}, false, o.Err
	}
	u := o.get("proxmox.cozystack.io", "ProxmoxNetwork", namespace, name)
	if u == nil {
		return ProxmoxNetwork{}, false, nil
	}
	n, err := networkFromUnstructured(u)
	if err != nil {
		return ProxmoxNetwork{}, false, err
	}
	vnet, err := networkVNet(u)
	if err != nil {
		return ProxmoxNetwork{}, false, err
	}
	n.VNet = vnet
	return n, true, nil
}

// vnetID is Proxmox's VNet ID rule: 2 to 8 letters and digits, starting
// with a letter.
var vnetID = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]{1,7}$`)

// networkVNet reads status.vnet, refusing a value that is not a VNet ID
// rather than attaching a NIC to a bridge of another name.
func networkVNet(u *unstructured.Unstructured) (string, error) {
	raw, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "vnet")
	if !found || raw == nil {
		return "", nil
	}
	field := "status.vnet"
	v, ok := raw.(string)
	if !ok {
		return "", refuse(field, "ProxmoxNetwork %s: status.vnet is %T %v, not a string: give the Proxmox SDN VNet ID the controller reports, or leave status.vnet out for a plain bridge and VLAN",
			termsafe.Cut(u.GetNamespace()+"/"+u.GetName()), raw, termsafe.Cut(fmt.Sprint(raw)))
	}
	if v != "" && !vnetID.MatchString(v) {
		return "", refuse(field, "ProxmoxNetwork %s: status.vnet %q is not a Proxmox SDN VNet ID (2-8 letters and digits, starting with a letter)",
			termsafe.Cut(u.GetNamespace()+"/"+u.GetName()), v)
	}
	return v, nil
}

// networkFromUnstructured reads the status fields the render uses. A field
// of the wrong type (a vlan written "3900", a bridge that is a number) is
// refused by its path rather than read as absent, which would report the
// network as having no VLAN yet.
func networkFromUnstructured(u *unstructured.Unstructured) (ProxmoxNetwork, error) {
	n := ProxmoxNetwork{}
	raw, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status")
	if !found || raw == nil {
		return n, nil
	}
	st, ok := raw.(map[string]any)
	if !ok {
		return n, refuse("status", "ProxmoxNetwork %s: status is %s, not a mapping: give the object as kubectl get -o yaml prints it",
			termsafe.Cut(u.GetNamespace()+"/"+u.GetName()), kindOf(raw))
	}
	var err error
	for field, p := range map[string]*string{"bridge": &n.Bridge, "gateway": &n.Gateway} {
		if *p, err = statusString(u, st, field); err != nil {
			return n, err
		}
	}
	for field, p := range map[string]*int{"vlan": &n.VLAN, "mtu": &n.MTU, "prefix": &n.Prefix} {
		if *p, err = statusInt(u, st, field); err != nil {
			return n, err
		}
	}
	conds, _, _ := unstructured.NestedSlice(st, "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		n.Ready = &Condition{Status: s, Reason: r, Message: msg}
	}
	return n, nil
}

// statusString reads status.<field>, a string or absent.
func statusString(u *unstructured.Unstructured, st map[string]any, field string) (string, error) {
	switch v := st[field].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", refuse("status."+field, "ProxmoxNetwork %s: status.%s is %s %s, not a string: give the value the controller reports",
			termsafe.Cut(u.GetNamespace()+"/"+u.GetName()), field, kindOf(v), termsafe.Cut(fmt.Sprint(v)))
	}
}

// statusInt reads status.<field>, a whole number or absent.
func statusInt(u *unstructured.Unstructured, st map[string]any, field string) (int, error) {
	name := termsafe.Cut(u.GetNamespace() + "/" + u.GetName())
	switch v := st[field].(type) {
	case nil:
		return 0, nil
	case int64:
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return int(v), nil
		}
	case float64:
		if v == math.Trunc(v) && v >= math.MinInt32 && v <= math.MaxInt32 {
			return int(v), nil
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			return 0, refuse("status."+field, "ProxmoxNetwork %s: status.%s is the string %s: it must be an integer, written without quotes (%s: %d, not %s: %s)",
				name, field, termsafe.Quote(v), field, n, field, termsafe.Quote(v))
		}
		return 0, refuse("status."+field, "ProxmoxNetwork %s: status.%s is the string %s: it must be an integer", name, field, termsafe.Quote(v))
	default:
		return 0, refuse("status."+field, "ProxmoxNetwork %s: status.%s is %s %s: it must be an integer", name, field, kindOf(v), termsafe.Cut(fmt.Sprint(v)))
	}
	return 0, refuse("status."+field, "ProxmoxNetwork %s: status.%s is %v: it must be a whole number within 32 bits", name, field, st[field])
}

// kindOf names a decoded JSON value's kind as YAML readers know it.
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}
