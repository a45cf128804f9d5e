package ovngatewaytest

import (
	"cmp"
	"maps"
	"slices"
)

// State is what an NB holds about gateways, without UUIDs, so that tests can
// compare the rows of two servers or of two points in time with cmp.Diff.
type State struct {
	// Groups are the HA_Chassis_Group rows by name.
	Groups map[string]Group
	// Ports are the Logical_Router_Port rows by name.
	Ports map[string]Port
}

// Group is one HA_Chassis_Group row with its HA_Chassis members.
type Group struct {
	ExternalIDs map[string]string
	// Chassis are sorted by descending priority, then by name.
	Chassis []Chassis
}

// Chassis is one HA_Chassis or Gateway_Chassis row.
type Chassis struct {
	Name     string
	Priority int
}

// Port is one Logical_Router_Port row.
type Port struct {
	// Group names the HA_Chassis_Group the port points at; "" when none.
	Group string
	// GatewayChassis are the port's Gateway_Chassis rows.
	GatewayChassis []Chassis
	// Options is the port's options; nil when empty.
	Options map[string]string
	// ExternalIDs is the port's external_ids without the "lr" and "vendor"
	// tags Kube-OVN writes on every router port (AddRouterPort seeds them);
	// nil when nothing else is there.
	ExternalIDs map[string]string
}

// State is the UUID-free view of r.
func (r Rows) State() State {
	members := map[string]Chassis{}
	for _, h := range r.Chassis {
		members[h.UUID] = Chassis{Name: h.ChassisName, Priority: h.Priority}
	}
	gws := map[string]Chassis{}
	for _, g := range r.GatewayChassis {
		gws[g.UUID] = Chassis{Name: g.ChassisName, Priority: g.Priority}
	}
	st := State{Groups: map[string]Group{}, Ports: map[string]Port{}}
	names := map[string]string{}
	for _, g := range r.Groups {
		names[g.UUID] = g.Name
		st.Groups[g.Name] = Group{ExternalIDs: g.ExternalIDs, Chassis: sorted(g.HaChassis, members)}
	}
	for _, p := range r.Ports {
		var port Port
		if p.HaChassisGroup != nil {
			port.Group = names[*p.HaChassisGroup]
		}
		port.GatewayChassis = sorted(p.GatewayChassis, gws)
		if len(p.Options) > 0 {
			port.Options = p.Options
		}
		port.ExternalIDs = withoutKubeOVNTags(p.ExternalIDs)
		st.Ports[p.Name] = port
	}
	return st
}

// withoutKubeOVNTags is ids without the tags AddRouterPort seeds, or nil
// when nothing else is left.
func withoutKubeOVNTags(ids map[string]string) map[string]string {
	out := maps.Clone(ids)
	delete(out, "lr")
	delete(out, "vendor")
	if len(out) == 0 {
		return nil
	}
	return out
}

func sorted(uuids []string, rows map[string]Chassis) []Chassis {
	var out []Chassis
	for _, u := range uuids {
		out = append(out, rows[u])
	}
	slices.SortFunc(out, func(a, b Chassis) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}
