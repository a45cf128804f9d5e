package ovngateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
)

// Released says what Release found.
type Released struct {
	// Deleted is true when the network's group existed, was ours and is
	// now gone.
	Deleted bool
	// MTUCleared counts the router ports whose gateway_mtu this network's
	// gateway had set and Release removed.
	MTUCleared int
	// Foreign is set when a group with the network's name exists but
	// belongs to someone else; it is left alone and counts as released.
	Foreign string
}

// Release deletes the network's group when it is ours, after clearing the
// ha_chassis_group of every router port that points at it, and removes the
// gateway_mtu of every port marked as set by this network, in one
// transaction. A missing or foreign group needs nothing; a gateway_mtu
// without this network's mark is left alone. Call it before the
// network's VLAN is given back; until it succeeds the VLAN is held
// (GatewayReleasePending).
func (c *Client) Release(ctx context.Context, n Network) (Released, error) {
	if err := n.Validate(); err != nil {
		return Released{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, PassTimeout)
	defer cancel()
	s, err := c.session()
	if err != nil {
		return Released{}, fmt.Errorf("cannot release the gateway of network %q: %w", n.ID(), err)
	}
	g := &nbdb.HAChassisGroup{Name: n.Group()}
	ok, err := s.get(ctx, g)
	if err != nil {
		return Released{}, err
	}
	var out Released
	if ok {
		if msg, foreign := foreignGroup(Gateway{Network: n}, g); foreign || g.ExternalIDs[OwnerKey] != OwnerValue {
			if msg == "" {
				msg = fmt.Sprintf("OVN HA_Chassis_Group %q has no owner", g.Name)
			}
			out.Foreign, g = msg, nil
		}
	} else {
		g = nil
	}
	out.MTUCleared, err = s.release(ctx, n.ID(), g)
	if err != nil {
		return Released{}, fmt.Errorf("cannot release the gateway of network %q: %w", n.ID(), err)
	}
	out.Deleted = g != nil
	return out, nil
}

// deleteGroup clears every port that points at g, deletes g and removes
// the gateway_mtu set for g's network, in one transaction.
func (s *session) deleteGroup(ctx context.Context, g *nbdb.HAChassisGroup) error {
	_, err := s.release(ctx, g.ExternalIDs[NetworkKey], g)
	return err
}

// release removes, in one transaction, the gateway_mtu of every port
// marked as set by network id and, when g is not nil, clears every port
// that points at g and deletes g. It returns how many ports' gateway_mtu
// it removed; with nothing to do it sends no transaction.
func (s *session) release(ctx context.Context, id string, g *nbdb.HAChassisGroup) (int, error) {
	t := &txn{}
	if g != nil {
		if err := s.unpointPorts(ctx, t, g); err != nil {
			return 0, err
		}
	}
	cleared, err := s.clearMTU(ctx, t, id)
	if err != nil || len(t.ops) == 0 {
		return 0, err
	}
	return cleared, s.transact(ctx, t)
}

// clearMTU adds to t the removal of gateway_mtu and its owner mark from
// every port marked as set by network id.
func (s *session) clearMTU(ctx context.Context, t *txn, id string) (int, error) {
	if id == "" {
		return 0, nil
	}
	var ports []nbdb.LogicalRouterPort
	marked := &nbdb.LogicalRouterPort{ExternalIDs: map[string]string{GatewayMTUOwnerKey: id}}
	if err := s.nb.Where(marked).List(ctx, &ports); err != nil {
		return 0, wrapNB("read the NB cache", err)
	}
	slices.SortFunc(ports, func(a, b nbdb.LogicalRouterPort) int { return strings.Compare(a.Name, b.Name) })
	n := 0
	for i := range ports {
		p := &ports[i]
		if p.ExternalIDs[GatewayMTUOwnerKey] != id {
			continue
		}
		opts, ids := maps.Clone(nonNil(p.Options)), maps.Clone(nonNil(p.ExternalIDs))
		delete(opts, GatewayMTUOption)
		delete(ids, GatewayMTUOwnerKey)
		if err := s.setPortMTU(t, p, opts, ids); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// unpointPorts adds to t the clearing of every port that points at g and
// the deletion of g.
func (s *session) unpointPorts(ctx context.Context, t *txn, g *nbdb.HAChassisGroup) error {
	var ports []nbdb.LogicalRouterPort
	uuid := g.UUID
	if err := s.nb.Where(&nbdb.LogicalRouterPort{HaChassisGroup: &uuid}).List(ctx, &ports); err != nil {
		return wrapNB("read the NB cache", err)
	}
	slices.SortFunc(ports, func(a, b nbdb.LogicalRouterPort) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range ports {
		sel := &nbdb.LogicalRouterPort{}
		upd := &nbdb.LogicalRouterPort{UUID: p.UUID}
		ops, err := s.nb.WhereAll(sel,
			modelCond(&sel.UUID, p.UUID),
			modelCond(&sel.HaChassisGroup, &uuid),
		).Update(upd, &upd.HaChassisGroup)
		if err := t.add(anyCount, ops, err); err != nil {
			return err
		}
	}
	ops, err := s.nb.Where(&nbdb.HAChassisGroup{UUID: g.UUID}).Delete()
	return t.add(1, ops, err)
}

// Exists says whether the ProxmoxNetwork namespace/name still exists. It
// returns an error only when it cannot tell.
type Exists func(ctx context.Context, namespace, name string) (bool, error)

// Collected says what Collect did.
type Collected struct {
	// Deleted are the groups removed because their network is gone.
	Deleted []string
	// Kept counts owned groups whose network still exists.
	Kept int
	// Skipped are owned groups whose network tag cannot be parsed; they are
	// left alone.
	Skipped []string
}

// Collect deletes every group tagged owner=proxmox-network whose network no
// longer exists, clearing the ports that point at it first. Groups without
// that owner are never touched. A failure for one group does not stop the
// others; the errors are joined.
func (c *Client) Collect(ctx context.Context, exists Exists) (Collected, error) {
	s, err := c.session()
	if err != nil {
		return Collected{}, fmt.Errorf("cannot collect gateway groups: %w", err)
	}
	var groups []nbdb.HAChassisGroup
	owned := &nbdb.HAChassisGroup{ExternalIDs: map[string]string{OwnerKey: OwnerValue}}
	if err := s.nb.Where(owned).List(ctx, &groups); err != nil {
		return Collected{}, fmt.Errorf("cannot collect gateway groups: %w", wrapNB("read the NB cache", err))
	}
	slices.SortFunc(groups, func(a, b nbdb.HAChassisGroup) int { return strings.Compare(a.Name, b.Name) })
	var out Collected
	var errs []error
	for i := range groups {
		g := &groups[i]
		if g.ExternalIDs[OwnerKey] != OwnerValue {
			continue
		}
		ns, name, err := ParseNetworkID(g.ExternalIDs[NetworkKey])
		if err != nil {
			out.Skipped = append(out.Skipped, g.Name)
			continue
		}
		ok, err := exists(ctx, ns, name)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("cannot tell whether network %s/%s of group %q exists: %w", ns, name, g.Name, err))
		case ok:
			out.Kept++
		default:
			if err := s.deleteGroup(ctx, g); err != nil {
				errs = append(errs, fmt.Errorf("cannot delete group %q of network %s/%s: %w", g.Name, ns, name, err))
				continue
			}
			out.Deleted = append(out.Deleted, g.Name)
		}
	}
	return out, errors.Join(errs...)
}
