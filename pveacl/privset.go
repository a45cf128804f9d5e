package pveacl

import (
	"encoding/json"
	"math/bits"
	"sort"
)

// allPrivileges is the union of the privileges of every supported version,
// sorted; a privilege's position is its bit in a PrivSet.
var allPrivileges = func() []string {
	seen := map[string]bool{permissionsModify: true}
	for _, v := range []Version{PVE8, PVE9} {
		for _, c := range categories(v) {
			for _, list := range [][]string{c.root, c.admin, c.user, c.audit} {
				for _, p := range list {
					seen[p] = true
				}
			}
		}
	}
	out := sortedKeys(seen)
	if len(out) > 64 {
		panic("pveacl: more than 64 privileges")
	}
	return out
}()

var privBit = func() map[string]uint64 {
	m := make(map[string]uint64, len(allPrivileges))
	for i, p := range allPrivileges {
		m[p] = 1 << uint(i)
	}
	return m
}()

// PrivSet is a set of privileges, each with the informational propagate
// flag that GET /access/permissions reports (1 when any role that grants it
// on the path propagates). The zero value is the empty set.
type PrivSet struct {
	has, prop uint64
}

// NewPrivSet returns the set of the named privileges without the propagate
// flag. Unknown names are ignored.
func NewPrivSet(names ...string) PrivSet {
	var s PrivSet
	for _, n := range names {
		s = s.with(n, false)
	}
	return s
}

func (s PrivSet) with(name string, propagate bool) PrivSet {
	b := privBit[name]
	s.has |= b
	if propagate {
		s.prop |= b
	}
	return s
}

func (s PrivSet) without(name string) PrivSet {
	b := privBit[name]
	s.has &^= b
	s.prop &^= b
	return s
}

// Has reports whether the privilege is in the set.
func (s PrivSet) Has(name string) bool { b := privBit[name]; return b != 0 && s.has&b != 0 }

// Propagates reports the propagate flag of a privilege in the set.
func (s PrivSet) Propagates(name string) bool { b := privBit[name]; return b != 0 && s.prop&b != 0 }

// Empty reports whether the set holds no privilege.
func (s PrivSet) Empty() bool { return s.has == 0 }

// size is the number of privileges in the set.
func (s PrivSet) size() int { return bits.OnesCount64(s.has) }

// Names returns the privileges in the set, sorted.
func (s PrivSet) Names() []string {
	out := make([]string, 0, s.size())
	for h := s.has; h != 0; h &= h - 1 {
		out = append(out, allPrivileges[bits.TrailingZeros64(h)])
	}
	return out
}

// Map returns the set as GET /access/permissions does: privilege -> 0|1.
func (s PrivSet) Map() map[string]int {
	m := make(map[string]int, s.size())
	for h := s.has; h != 0; h &= h - 1 {
		i := bits.TrailingZeros64(h)
		m[allPrivileges[i]] = int(s.prop >> uint(i) & 1)
	}
	return m
}

// Union returns the privileges in s or o; a flag is the OR of both.
func (s PrivSet) Union(o PrivSet) PrivSet { return PrivSet{has: s.has | o.has, prop: s.prop | o.prop} }

// intersect returns the privileges in both sets; a flag is the AND of both,
// which is how a privilege-separated token meets its user.
func (s PrivSet) intersect(o PrivSet) PrivSet {
	h := s.has & o.has
	return PrivSet{has: h, prop: s.prop & o.prop & h}
}

// Minus returns the privileges of s that are not in o.
func (s PrivSet) Minus(o PrivSet) PrivSet {
	h := s.has &^ o.has
	return PrivSet{has: h, prop: s.prop & h}
}

// MarshalJSON writes the set as {"Priv":0|1,...}.
func (s PrivSet) MarshalJSON() ([]byte, error) { return json.Marshal(s.Map()) }

// UnmarshalJSON reads {"Priv":0|1,...}; unknown privileges are an error.
func (s *PrivSet) UnmarshalJSON(b []byte) error {
	var m map[string]int
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	var out PrivSet
	var bad []string
	for k, v := range m {
		if privBit[k] == 0 {
			bad = append(bad, k)
			continue
		}
		out = out.with(k, v != 0)
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return &privilegeError{Version: DefaultVersion, Privileges: bad}
	}
	*s = out
	return nil
}

// String lists the privileges comma-separated.
func (s PrivSet) String() string {
	out := ""
	for i, n := range s.Names() {
		if i > 0 {
			out += ","
		}
		out += n
	}
	return out
}
