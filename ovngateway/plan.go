package ovngateway

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
)

// view is what the northbound database holds for one network.
type view struct {
	// port is the router port; nil when it does not exist.
	port *nbdb.LogicalRouterPort
	// group is the HA_Chassis_Group named after the port; nil when missing.
	group *nbdb.HAChassisGroup
	// members are the group's HA_Chassis rows that exist, by UUID.
	members map[string]nbdb.HAChassis
	// portGroup names the group the port points at, when that is not group
	// (its UUID when the row is unknown).
	portGroup string
}

// plan is the decision of one pass: an outcome and the writes that reach it.
type plan struct {
	outcome Outcome
	// create inserts the group with every wanted member.
	create bool
	// adopt writes the ownership tags into an existing untagged group.
	adopt bool
	// insert are the members to add to an existing group.
	insert []Member
	// update maps HA_Chassis UUIDs to their new priority.
	update map[string]int
	// remove are HA_Chassis UUIDs to drop from the group: unwanted,
	// duplicated or dangling.
	remove []string
	// point sets the port's ha_chassis_group, guarded by a wait that both of
	// its gateway columns are still empty.
	point bool
	// mtu rewrites the port's gateway_mtu and its owner mark (see
	// portMTU), guarded by a wait that the port's options and external_ids
	// are still the ones read.
	mtu bool
}

// writes reports whether the plan needs a transaction.
func (p plan) writes() bool {
	return p.create || p.adopt || p.point || p.mtu || len(p.insert) > 0 || len(p.update) > 0 || len(p.remove) > 0
}

// decide compares the wanted gateway with what the database holds. It never
// plans a write to a row that belongs to someone else.
func decide(gw Gateway, v view) plan {
	name, port := gw.Group(), gw.RouterPort
	if v.group != nil {
		if msg, foreign := foreignGroup(gw, v.group); foreign {
			return plan{outcome: Outcome{Reason: ReasonForeignGroup, Message: msg, Group: name}}
		}
	}
	switch {
	case v.port == nil:
		return plan{outcome: Outcome{Reason: ReasonRouterPortMissing, Group: name,
			Message: fmt.Sprintf("OVN has no logical router port %q yet", port)}}
	case len(v.port.GatewayChassis) > 0:
		return plan{outcome: Outcome{Reason: ReasonForeignGroup, Group: name,
			Message: fmt.Sprintf("router port %q has %d gateway_chassis; the controller leaves it alone", port, len(v.port.GatewayChassis))}}
	case v.port.HaChassisGroup != nil && (v.group == nil || *v.port.HaChassisGroup != v.group.UUID):
		return plan{outcome: Outcome{Reason: ReasonForeignGroup, Group: name,
			Message: fmt.Sprintf("router port %q already uses HA_Chassis_Group %q; the controller leaves it alone", port, v.portGroup)}}
	}
	if msg, foreign := foreignMTU(gw, v.port); foreign && gw.GatewayMTU != 0 {
		return plan{outcome: Outcome{Reason: ReasonForeignGatewayMTU, Group: name, Message: msg}}
	}
	if len(gw.Members) == 0 {
		return plan{outcome: Outcome{Reason: ReasonNoTrunkNodes, Group: name, Message: noTrunkMessage(gw)}}
	}
	p := plan{point: v.port.HaChassisGroup == nil, mtu: mtuDiffers(gw, v.port)}
	if v.group == nil {
		p.create = true
	} else {
		ids := v.group.ExternalIDs
		p.adopt = ids[OwnerKey] != OwnerValue || ids[NetworkKey] != gw.ID()
		p.insert, p.update, p.remove = diffMembers(gw.Members, v.group.HaChassis, v.members)
	}
	top := gw.Members[0]
	p.outcome = Outcome{
		Reason: ReasonChassisAssigned, Group: name, Chassis: len(gw.Members), Active: top.Chassis, GatewayMTU: gw.GatewayMTU,
		Message: fmt.Sprintf("router port %q uses HA_Chassis_Group %q with %d chassis; %s is active (node %s)",
			port, name, len(gw.Members), top.Chassis, top.Node),
	}
	return p
}

// foreignGroup says whether a group named after the network's port belongs
// to another owner or another network. An untagged group, or one tagged
// with our owner but no network, is ours to adopt.
func foreignGroup(gw Gateway, g *nbdb.HAChassisGroup) (string, bool) {
	owner, network := g.ExternalIDs[OwnerKey], g.ExternalIDs[NetworkKey]
	switch {
	case owner != "" && owner != OwnerValue:
		return fmt.Sprintf("OVN HA_Chassis_Group %q belongs to %q", g.Name, owner), true
	case owner == OwnerValue && network != "" && network != gw.ID():
		return fmt.Sprintf("OVN HA_Chassis_Group %q belongs to network %q", g.Name, network), true
	}
	return "", false
}

// foreignMTU says whether the port's gateway_mtu, or its owner mark, was
// set by anyone but this network's gateway. Such a value is never
// overwritten or removed.
func foreignMTU(gw Gateway, port *nbdb.LogicalRouterPort) (string, bool) {
	value, set := port.Options[GatewayMTUOption]
	owner, marked := port.ExternalIDs[GatewayMTUOwnerKey]
	switch {
	case marked && owner != gw.ID():
		return fmt.Sprintf("router port %q has options:%s set for network %q; the controller leaves it alone", port.Name, GatewayMTUOption, owner), true
	case set && !marked:
		return fmt.Sprintf("router port %q has options:%s=%s set by someone else; the controller leaves it alone", port.Name, GatewayMTUOption, value), true
	}
	return "", false
}

// portMTU is the port's options as the gateway wants them: gateway_mtu at
// gw.GatewayMTU, or without it when gw.GatewayMTU is 0. The caller has
// checked that any value there is this network's (foreignMTU).
func portMTU(gw Gateway, port *nbdb.LogicalRouterPort) map[string]string {
	opts := maps.Clone(port.Options)
	if opts == nil {
		opts = map[string]string{}
	}
	if gw.GatewayMTU == 0 {
		delete(opts, GatewayMTUOption)
	} else {
		opts[GatewayMTUOption] = strconv.Itoa(gw.GatewayMTU)
	}
	return opts
}

// mtuDiffers reports whether the port's gateway_mtu or its owner mark
// differ from what the gateway wants. A gateway without an MTU only ever
// removes the value its own network set.
func mtuDiffers(gw Gateway, port *nbdb.LogicalRouterPort) bool {
	if gw.GatewayMTU == 0 && port.ExternalIDs[GatewayMTUOwnerKey] != gw.ID() {
		return false
	}
	return !maps.Equal(portMTU(gw, port), port.Options) || !maps.Equal(portMarks(gw, port), port.ExternalIDs)
}

// portMarks is the port's external_ids as the gateway wants them: the
// owner mark present exactly while the gateway sets gateway_mtu.
func portMarks(gw Gateway, port *nbdb.LogicalRouterPort) map[string]string {
	ids := maps.Clone(port.ExternalIDs)
	if ids == nil {
		ids = map[string]string{}
	}
	if gw.GatewayMTU == 0 {
		delete(ids, GatewayMTUOwnerKey)
	} else {
		ids[GatewayMTUOwnerKey] = gw.ID()
	}
	return ids
}

func noTrunkMessage(gw Gateway) string {
	where := "the provider network"
	if gw.ProviderNetwork != "" {
		where = fmt.Sprintf("provider network %q", gw.ProviderNetwork)
	}
	return fmt.Sprintf("no Node is ready on %s with an OVN chassis; HA_Chassis_Group %q is left as it is", where, gw.Group())
}

// diffMembers compares the wanted members with the group's HA_Chassis
// references. For a chassis with several rows it keeps the one whose
// priority is already right (else the lowest UUID) and removes the others.
func diffMembers(want []Member, refs []string, rows map[string]nbdb.HAChassis) (insert []Member, update map[string]int, remove []string) {
	wanted := make(map[string]int, len(want))
	for _, m := range want {
		wanted[m.Chassis] = m.Priority
	}
	byChassis := map[string][]nbdb.HAChassis{}
	for _, u := range refs {
		row, ok := rows[u]
		if _, keep := wanted[row.ChassisName]; !ok || !keep {
			remove = append(remove, u)
			continue
		}
		byChassis[row.ChassisName] = append(byChassis[row.ChassisName], row)
	}
	for _, chassis := range slices.Sorted(maps.Keys(byChassis)) {
		rs, prio := byChassis[chassis], wanted[chassis]
		slices.SortFunc(rs, func(a, b nbdb.HAChassis) int {
			if am, bm := a.Priority == prio, b.Priority == prio; am != bm {
				if am {
					return -1
				}
				return 1
			}
			return cmp.Compare(a.UUID, b.UUID)
		})
		if rs[0].Priority != prio {
			if update == nil {
				update = map[string]int{}
			}
			update[rs[0].UUID] = prio
		}
		for _, r := range rs[1:] {
			remove = append(remove, r.UUID)
		}
	}
	for _, m := range want {
		if _, ok := byChassis[m.Chassis]; !ok {
			insert = append(insert, m)
		}
	}
	slices.Sort(remove)
	return insert, update, remove
}
