package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/samber/lo"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/cozyid"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

// VPC is a tenant VPC as `pxsubstrate render vpc` reads it, and where it
// was read: file, document and line.
type VPC struct {
	Where string
	Spec  vpcrender.Spec
}

// Network is the ProxmoxNetwork of a Proxmox-backed VPC subnet as the
// controller reported it Ready.
type Network struct {
	Namespace, VPC, Subnet string
	// Name is the network's (and the subnet's) id, cozyid.Subnet.
	Name   string
	Zone   string
	Bridge string
	VLAN   int
	CIDR   string
}

// NetworkTimeout bounds the wait for the controller to give a VPC's
// Proxmox-backed subnets their VLANs and report their networks Ready: it
// takes a second or two in the lab.
const NetworkTimeout = 2 * time.Minute

// vpcRender is one VPC of a tenant with its rendered objects, in apply
// order.
type vpcRender struct {
	vpc     VPC
	objects []*unstructured.Unstructured
}

// ApplyVPCs does for t's VPCs what Cozystack's vpc chart and the
// proxmox-network controller do. It renders each VPC with vpcrender.Render,
// the zones and the namespace's ProxmoxNetworks read from the management
// API server as `pxsubstrate render vpc --from-cluster` reads them, and
// refuses by file, document and field; it renders t's cluster and pools
// against the networks of those subnets as the controller will report
// them. Only then does it apply the objects (server-side, as a release
// upgrade would) and wait, up to NetworkTimeout, until the controller has
// given every Proxmox-backed subnet its VLAN and reports its network
// Ready. Last, the networks t's cluster and pools name, of these VPCs or
// applied earlier, join t's lookup, as the charts' lookups read them.
// Without VPCs it only does that last step.
func (l *Lab) ApplyVPCs(ctx context.Context, t *Tenant) ([]Network, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	var nets []Network
	if len(t.VPCs) > 0 {
		rendered, zones, err := l.renderVPCs(ctx, t)
		if err != nil {
			return nil, err
		}
		if err := l.dryRenderOn(ctx, *t, rendered, zones); err != nil {
			return nil, err
		}
		if err := l.checkNew(ctx, withSecretName(t.Cluster)); err != nil {
			return nil, err
		}
		if nets, err = l.applyVPCObjects(ctx, t.Cluster.Namespace, rendered); err != nil {
			return nil, err
		}
	}
	return nets, l.lookupNetworks(ctx, t)
}

// withSecretName is k with its capmox credentials Secret named, as
// ApplyACLs names it.
func withSecretName(k capmoxrender.Kubernetes) capmoxrender.Kubernetes {
	if k.Spec.Proxmox.Capmox.CredentialsSecretName == "" {
		k.Spec.Proxmox.Capmox.CredentialsSecretName = k.Name + CapmoxSecretSuffix
	}
	return k
}

// renderVPCs renders every VPC of t, reporting the refusals of all of them
// at once, one a line, each with where its VPC was read and its field. It
// also returns the zones of the management API server by name.
func (l *Lab) renderVPCs(ctx context.Context, t *Tenant) ([]vpcRender, map[string]*unstructured.Unstructured, error) {
	lookup, api, zones, err := l.vpcLookup(ctx, t.Cluster.Namespace)
	if err != nil {
		return nil, nil, err
	}
	var out []vpcRender
	var refused []string
	for _, v := range t.VPCs {
		spec := v.Spec
		spec.Zones = append(spec.Zones, lookup.Zones...)
		spec.Previous = append(spec.Previous, lookup.Networks...)
		spec.API = api
		r, err := vpcrender.Render(spec)
		if err != nil {
			refused = append(refused, refusalLines(v.Where, err)...)
			continue
		}
		objs, err := r.Unstructured()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", v.Where, err)
		}
		out = append(out, vpcRender{vpc: v, objects: objs})
	}
	if len(refused) > 0 {
		return nil, nil, errors.New(strings.Join(refused, "\n"))
	}
	return out, zones, nil
}

// refusalLines are err's refusals, each as "<where>: <field>: <message>".
func refusalLines(where string, err error) []string {
	rs := vpcrender.Refusals(err)
	if len(rs) == 0 {
		return []string{fmt.Sprintf("%s: %v", where, err)}
	}
	return lo.Map(rs, func(r *vpcrender.RefusalError, _ int) string {
		if r.Field == "" {
			return fmt.Sprintf("%s: %s", where, r.Message)
		}
		return fmt.Sprintf("%s: %s: %s", where, r.Field, r.Message)
	})
}

// vpcLookup reads the zones and the ProxmoxNetworks of namespace ns from
// the management API server, through vpcrender.ParseLookup as the CLI
// does, and whether the server serves the proxmox.cozystack.io API.
func (l *Lab) vpcLookup(ctx context.Context, ns string) (vpcrender.Lookup, vpcrender.APIState, map[string]*unstructured.Unstructured, error) {
	zones := listOf(v1alpha1.GroupVersion.String(), "ProxmoxNetworkZoneList")
	if err := l.Client.List(ctx, zones); meta.IsNoMatchError(err) {
		return vpcrender.Lookup{}, vpcrender.APIAbsent, nil, nil
	} else if err != nil {
		return vpcrender.Lookup{}, vpcrender.APIUnknown, nil, fmt.Errorf("cannot list ProxmoxNetworkZones: %w", err)
	}
	nets := listOf(v1alpha1.GroupVersion.String(), "ProxmoxNetworkList")
	if err := l.Client.List(ctx, nets, client.InNamespace(ns)); err != nil {
		return vpcrender.Lookup{}, vpcrender.APIUnknown, nil, fmt.Errorf("cannot list the ProxmoxNetworks of %s: %w", ns, err)
	}
	var items []map[string]any
	byName := map[string]*unstructured.Unstructured{}
	for _, list := range []*unstructured.UnstructuredList{zones, nets} {
		for i := range list.Items {
			items = append(items, list.Items[i].Object)
			if list.Items[i].GetKind() == "ProxmoxNetworkZone" {
				byName[list.Items[i].GetName()] = &list.Items[i]
			}
		}
	}
	lookup, err := vpcrender.LookupOf(items)
	if err != nil {
		return vpcrender.Lookup{}, vpcrender.APIUnknown, nil, fmt.Errorf("the management API server's %s objects: %w", v1alpha1.GroupVersion, err)
	}
	return lookup, vpcrender.APIServed, byName, nil
}

func listOf(apiVersion, kind string) *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(apiVersion)
	list.SetKind(kind)
	return list
}

// dryRenderOn renders t's cluster and pools, refusing as Apply would,
// with each rendered ProxmoxNetwork as the controller will report it: its
// zone's bridge and MTU, the first VLAN of the zone's ranges (the render
// does not judge the ID), its Subnet's gateway and prefix, Ready. A
// subnet whose zone does not exist is refused: its network would never be
// Ready.
func (l *Lab) dryRenderOn(ctx context.Context, t Tenant, rendered []vpcRender, zones map[string]*unstructured.Unstructured) error {
	lookup := &capmoxrender.Objects{}
	if t.lookup != nil {
		for _, u := range t.lookup.Items() {
			lookup.Add(u)
		}
	}
	for _, u := range t.Lookup {
		lookup.Add(u)
	}
	t.lookup, t.Lookup = lookup, nil
	var errs []error
	for _, r := range rendered {
		for _, o := range r.objects {
			if o.GetKind() != "ProxmoxNetwork" {
				continue
			}
			n, err := provisional(o, r, zones)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			lookup.Add(n)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	t.Cluster = withSecretName(t.Cluster)
	return l.dryRender(ctx, t, l.TenantSpec(t))
}

// provisional is network n of r as the controller will report it Ready.
func provisional(n *unstructured.Unstructured, r vpcRender, zones map[string]*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	zoneName, _, _ := unstructured.NestedString(n.Object, "spec", "zone")
	subnetName := n.GetLabels()[vpcrender.LabelSubnetName]
	zone, ok := zones[zoneName]
	if !ok {
		return nil, fmt.Errorf("%s: subnets[%s].proxmox.zone: no ProxmoxNetworkZone %q exists in the lab (its zone is %s): name it, or leave proxmox.zone out",
			r.vpc.Where, subnetName, zoneName, Zone)
	}
	bridge, _, _ := unstructured.NestedString(zone.Object, "spec", "bridge")
	ranges, _, _ := unstructured.NestedStringSlice(zone.Object, "spec", "vlanRanges")
	vlan := 1
	if len(ranges) > 0 {
		if first, _, err := vlanalloc.ParseRange(ranges[0]); err == nil {
			vlan = first
		}
	}
	status := map[string]any{"bridge": bridge, "vlan": int64(vlan),
		"conditions": []any{map[string]any{"type": v1alpha1.ConditionReady, "status": "True", "reason": "Ready"}}}
	if mtu, found, _ := unstructured.NestedInt64(zone.Object, "spec", "mtu"); found {
		status["mtu"] = mtu
	}
	for _, o := range r.objects {
		if o.GetKind() != "Subnet" || o.GetName() != n.GetName() {
			continue
		}
		cidr, _, _ := unstructured.NestedString(o.Object, "spec", "cidrBlock")
		gateway, _, _ := unstructured.NestedString(o.Object, "spec", "gateway")
		status["cidr"], status["gateway"] = cidr, gateway
		if _, bits, ok := strings.Cut(cidr, "/"); ok {
			var prefix int64
			_, _ = fmt.Sscan(bits, &prefix)
			status["prefix"] = prefix
		}
	}
	out := n.DeepCopy()
	out.Object["status"] = status
	return out, nil
}

// applyVPCObjects applies the rendered objects in order, then waits for
// every Proxmox-backed subnet's network to be Ready.
func (l *Lab) applyVPCObjects(ctx context.Context, ns string, rendered []vpcRender) ([]Network, error) {
	if err := l.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	var nets []Network
	for _, r := range rendered {
		for _, o := range r.objects {
			if err := l.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.ForceOwnership, client.FieldOwner(FieldManager)); err != nil {
				return nil, fmt.Errorf("%s: cannot apply %s %s: %w", r.vpc.Where, o.GetKind(), client.ObjectKeyFromObject(o), err)
			}
			if o.GetKind() == "ProxmoxNetwork" {
				zone, _, _ := unstructured.NestedString(o.Object, "spec", "zone")
				nets = append(nets, Network{Namespace: ns, VPC: r.vpc.Spec.Name, Subnet: o.GetLabels()[vpcrender.LabelSubnetName], Name: o.GetName(), Zone: zone})
			}
		}
		l.log(fmt.Sprintf("VPC %s/%s: %d objects applied", ns, r.vpc.Spec.Name, len(r.objects)))
	}
	for i := range nets {
		if err := l.waitNetwork(ctx, &nets[i]); err != nil {
			return nil, err
		}
	}
	return nets, nil
}

// waitNetwork waits until the controller reports n Ready with a VLAN, and
// fills in its VLAN, bridge and CIDR.
func (l *Lab) waitNetwork(ctx context.Context, n *Network) error {
	deadline := time.Now().Add(NetworkTimeout)
	state := "not created"
	for {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(v1alpha1.GroupVersion.String())
		u.SetKind("ProxmoxNetwork")
		err := l.Client.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Name}, u)
		switch {
		case err == nil:
			var ready bool
			ready, state = networkReady(u)
			if ready {
				vlan, _, _ := unstructured.NestedInt64(u.Object, "status", "vlan")
				n.VLAN = int(vlan)
				n.Bridge, _, _ = unstructured.NestedString(u.Object, "status", "bridge")
				n.CIDR, _, _ = unstructured.NestedString(u.Object, "status", "cidr")
				l.log(fmt.Sprintf("ProxmoxNetwork %s/%s (subnet %s of VPC %s): VLAN %d of %s, Ready", n.Namespace, n.Name, n.Subnet, n.VPC, n.VLAN, n.Bridge))
				return nil
			}
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("cannot read ProxmoxNetwork %s/%s: %w", n.Namespace, n.Name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ProxmoxNetwork %s/%s of subnet %s of VPC %s is not Ready after %s: %s; the controller's log is controller.log in the lab's folder",
				n.Namespace, n.Name, n.Subnet, n.VPC, NetworkTimeout, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// networkReady reports whether u holds a VLAN and is Ready, and else its
// Ready condition as a phrase.
func networkReady(u *unstructured.Unstructured) (bool, string) {
	vlan, _, _ := unstructured.NestedInt64(u.Object, "status", "vlan")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != v1alpha1.ConditionReady {
			continue
		}
		if m["status"] == "True" && vlan > 0 {
			return true, ""
		}
		return false, fmt.Sprintf("Ready=%v/%v: %v", m["status"], m["reason"], m["message"])
	}
	return false, "no Ready condition yet"
}

// lookupNetworks adds to t.Lookup the ProxmoxNetwork of every VPC subnet
// t's cluster and pools name that t.Lookup lacks and the management API
// server holds: what the charts' lookups read.
func (l *Lab) lookupNetworks(ctx context.Context, t *Tenant) error {
	ns := t.Cluster.Namespace
	have := map[string]bool{}
	for _, u := range t.Lookup {
		if u.GetKind() == "ProxmoxNetwork" && u.GetNamespace() == ns {
			have[u.GetName()] = true
		}
	}
	for _, id := range subnetIDs(*t) {
		if have[id] {
			continue
		}
		have[id] = true
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(v1alpha1.GroupVersion.String())
		u.SetKind("ProxmoxNetwork")
		err := l.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: id}, u)
		switch {
		case err == nil:
			t.Lookup = append(t.Lookup, u)
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			// The render names the missing network.
		default:
			return fmt.Errorf("cannot read ProxmoxNetwork %s/%s: %w", ns, id, err)
		}
	}
	return nil
}

// subnetIDs are the ids (cozyid.Subnet) of the VPC subnets t's cluster and
// pools name, each once.
func subnetIDs(t Tenant) []string {
	ns := t.Cluster.Namespace
	id := func(vpc, subnet string) string {
		return string(cozyid.Subnet(ns, cozyid.VPC(ns, cozyid.VPCName(vpc)), cozyid.SubnetName(subnet)))
	}
	var out []string
	if n := t.Cluster.Spec.Proxmox.Network; n.VPC != "" && n.Subnet != "" {
		out = append(out, id(n.VPC, n.Subnet))
	}
	for _, p := range t.Pools {
		if n := p.Spec.Proxmox.Network; n.VPC != "" && n.Subnet != "" {
			out = append(out, id(n.VPC, n.Subnet))
		}
		for _, a := range p.Spec.Proxmox.AdditionalNetworks {
			if a.VPC != "" && a.Subnet != "" {
				out = append(out, id(a.VPC, a.Subnet))
			}
		}
	}
	return lo.Uniq(out)
}
