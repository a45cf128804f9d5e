package network

import (
	"context"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// Reasons of a zone's HypervisorReady condition.
const (
	ReasonHypervisorReady     = "AllVLANsCarried"
	ReasonVLANsWithheld       = "VLANsWithheld"
	ReasonHypervisorStale     = "StaleView"
	ReasonCredentialsUnusable = "CredentialsUnusable"
)

// Hypervisor checks a zone's Proxmox nodes (Phase 0 of docs/pvesdn.md).
// The zone reconcile asks it once per pass for a zone with
// spec.sdn.credentialsRef, never per allocation.
type Hypervisor interface {
	Check(ctx context.Context, zone *v1alpha1.ProxmoxNetworkZone) (*pvesdn.Report, error)
}

// SDNZone turns a ProxmoxNetworkZone into pvesdn's zone: its VLAN ranges
// minus the reserved IDs, bridge, MTU and SDN zone.
func SDNZone(obj *v1alpha1.ProxmoxNetworkZone) (pvesdn.Zone, error) {
	reserved := make([]int, len(obj.Spec.ReservedVLANs))
	for i, r := range obj.Spec.ReservedVLANs {
		reserved[i] = int(r)
	}
	set, err := vlanalloc.Allocatable(obj.Spec.VLANRanges, reserved)
	if err != nil {
		return pvesdn.Zone{}, fmt.Errorf("spec.vlanRanges: %w", err)
	}
	z := pvesdn.Zone{Name: obj.Name, Bridge: obj.Spec.Bridge, VLANs: set}
	if obj.Spec.MTU != nil {
		z.MTU = int(*obj.Spec.MTU)
	}
	if s := obj.Spec.SDN; s != nil {
		if s.Mode != v1alpha1.SDNModeCheck && s.Mode != v1alpha1.SDNModeVNets {
			return pvesdn.Zone{}, fmt.Errorf("spec.sdn.mode %q is neither Check nor VNets", s.Mode)
		}
		if s.Mode == v1alpha1.SDNModeVNets {
			z.SDNZone, z.VNetPrefix = s.Zone, s.VNetPrefix
		}
	}
	return z, nil
}

// vnetOf is the VNet of a VLAN in a zone of mode VNets, else "".
func vnetOf(zone *v1alpha1.ProxmoxNetworkZone, vid int) string {
	if zone.Spec.SDN == nil || zone.Spec.SDN.Mode != v1alpha1.SDNModeVNets {
		return ""
	}
	z, err := SDNZone(zone)
	if err != nil {
		return ""
	}
	return z.VNetID(vid)
}

// hyperViews keeps each zone's last report, for the stale view.
type hyperViews struct {
	mu   sync.Mutex
	last map[string]*pvesdn.Report
}

func (v *hyperViews) swap(zone string, r *pvesdn.Report) *pvesdn.Report {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.last == nil {
		v.last = map[string]*pvesdn.Report{}
	}
	prev := v.last[zone]
	if r != nil {
		v.last[zone] = r
	}
	return prev
}

// zoneHypervisor checks the zone's Proxmox nodes once per pass and shrinks
// the allocator's view of the zone to the VLANs every node carries; a node
// that cannot be read keeps its last known view, named stale. A zone
// without spec.sdn.credentialsRef withholds nothing.
func (c *Controller) zoneHypervisor(ctx context.Context, p *zonePassState) (engine.Result, error) {
	z := p.Object
	if c.cfg.Hypervisor == nil || z.Spec.SDN == nil || z.Spec.SDN.CredentialsRef == nil {
		if c.cache.setWithheld(z.Name, vlanalloc.Set{}) {
			c.enqueueNetworks(c.cache.zoneNetworkKeys(z.Name))
		}
		z.Status.SDN = nil
		meta := &z.Status.Conditions
		for i := range *meta {
			if (*meta)[i].Type == v1alpha1.ConditionHypervisorReady {
				*meta = append((*meta)[:i], (*meta)[i+1:]...)
				break
			}
		}
		return engine.Result{}, nil
	}
	zone, err := SDNZone(z)
	if err != nil {
		return engine.Result{}, nil // zoneAllocator reports the invalid zone
	}
	cond := func(status metav1.ConditionStatus, reason, msg string) {
		p.SetCondition(&z.Status.Conditions, v1alpha1.ConditionHypervisorReady, status, reason, msg)
	}
	rep, err := c.cfg.Hypervisor.Check(ctx, z)
	prev := c.hyper.swap(z.Name, nil)
	if err != nil {
		rep = &pvesdn.Report{Zone: z.Name, Error: err.Error()}
	}
	rep = rep.WithLastKnown(prev, zone)
	c.hyper.swap(z.Name, rep)
	carry := rep.CarryableSet()
	withheld := zone.VLANs.Subtract(&carry)
	if c.cache.setWithheld(z.Name, withheld) {
		c.enqueueNetworks(c.cache.zoneNetworkKeys(z.Name))
	}
	st := &v1alpha1.ZoneSDNStatus{CarryableVLANs: carry.String(), WithheldVLANs: withheld.String(),
		Nodes: int32(len(rep.Nodes)), Requests: int32(rep.Requests)}
	for _, n := range rep.Nodes {
		if n.Stale {
			st.StaleNodes = append(st.StaleNodes, n.Name)
		}
	}
	z.Status.SDN = st
	switch {
	case err != nil && prev == nil:
		cond(metav1.ConditionFalse, ReasonCredentialsUnusable, err.Error()+"; no VLAN is handed out until the nodes are read once")
	case len(st.StaleNodes) > 0 || rep.Error != "":
		cond(metav1.ConditionFalse, ReasonHypervisorStale, "last known view of "+strings.Join(st.StaleNodes, ", ")+" (stale): "+summary(rep))
	case withheld.Len() > 0:
		cond(metav1.ConditionFalse, ReasonVLANsWithheld, fmt.Sprintf("VLANs %s are not handed out: %s", withheld.String(), summary(rep)))
	default:
		cond(metav1.ConditionTrue, ReasonHypervisorReady, fmt.Sprintf("%d node(s) carry every zone VLAN", len(rep.Nodes)))
	}
	return engine.Result{}, nil
}

// summary lists the report's findings, at most five.
func summary(rep *pvesdn.Report) string {
	var parts []string
	for i, f := range rep.Findings {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(rep.Findings)-5))
			break
		}
		parts = append(parts, f.Message)
	}
	if len(parts) == 0 {
		return "no finding"
	}
	return strings.Join(parts, "; ")
}
