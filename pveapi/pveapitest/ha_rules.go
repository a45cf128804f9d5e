package pveapitest

import "sort"

// ruleErrors is PVE::HA::Rules->check_feasibility (src/PVE/HA/Rules.pm)
// over the enabled rules and every cluster node: per rule and property, the
// messages of each registered check, in the order the checks run (the
// node-affinity plugin's, the resource-affinity plugin's, then the global
// ones).
func (s *state) ruleErrors() map[string]map[string][]string {
	errs := map[string]map[string][]string{}
	add := func(id, msg string) {
		if errs[id] == nil {
			errs[id] = map[string][]string{}
		}
		errs[id]["resources"] = append(errs[id]["resources"], msg)
	}
	var na, ra, pos, neg []*haRule
	for _, r := range s.ha().sortedRules() {
		if r.disabled() {
			continue
		}
		switch {
		case r.typ == "node-affinity":
			na = append(na, r)
		case r.opts["affinity"] == "positive":
			ra, pos = append(ra, r), append(pos, r)
		default:
			ra, neg = append(ra, r), append(neg, r)
		}
	}
	// NodeAffinity.pm check_single_resource_reference
	uses := map[string][]string{}
	for _, r := range na {
		for sid := range r.resources {
			uses[sid] = append(uses[sid], r.id)
		}
	}
	for _, sid := range sortedKeys(uses) {
		if len(uses[sid]) > 1 {
			for _, id := range uses[sid] {
				add(id, "resource '"+sid+"' is already used in another node affinity rule")
			}
		}
	}
	// ResourceAffinity.pm check_resource_affinity_resources_count
	for _, r := range ra {
		if len(r.resources) < 2 {
			add(r.id, "rule is ineffective as there are less than two resources")
		}
	}
	// check_negative_resource_affinity_resources_count
	for _, r := range neg {
		if len(r.resources) > len(s.nodes) {
			add(r.id, "rule defines more resources than available nodes")
		}
	}
	merged := disjointSets(pos)
	// check_inter_resource_affinity_rules_consistency
	for _, set := range merged {
		for _, n := range neg {
			if countCommon(set.resources, n.resources) < 2 {
				continue
			}
			add(n.id, "rule shares two or more resources with a positive resource affinity rule")
			for _, id := range set.ids {
				add(id, "rule shares two or more resources with a negative resource affinity rule")
			}
		}
	}
	// Rules.pm check_single_priority_node_affinity_in_resource_affinity_rules
	for _, r := range ra {
		var paired []string
		multi := false
		for _, n := range na {
			if countCommon(r.resources, n.resources) == 0 {
				continue
			}
			multi = multi || multiplePriorities(n.nodes)
			paired = append(paired, n.id)
		}
		if multi {
			add(r.id, "resources are in node affinity rules with multiple priorities")
			for _, id := range paired {
				add(id, "resources are in a resource affinity rule and cannot be in a node affinity rule with multiple priorities")
			}
		}
	}
	// check_single_node_affinity_per_positive_resource_affinity_rule
	for _, set := range merged {
		var paired []string
		for _, n := range na {
			if countCommon(set.resources, n.resources) > 0 {
				paired = append(paired, n.id)
			}
		}
		if len(paired) > 1 {
			for _, id := range set.ids {
				add(id, "resources are in multiple node affinity rules")
			}
			for _, id := range paired {
				add(id, "at least one resource is in a positive resource affinity rule and there are other resources in at least one other node affinity rule already")
			}
		}
	}
	// check_negative_resource_affinity_node_affinity_consistency
	for _, r := range neg {
		allowed, located := map[string]bool{}, map[string]bool{}
		var paired []string
		for _, n := range na {
			common := 0
			for sid := range r.resources {
				if n.resources[sid] {
					located[sid] = true
					common++
				}
			}
			if common == 0 {
				continue
			}
			for node := range n.nodes {
				allowed[node] = true
			}
			paired = append(paired, n.id)
		}
		if len(allowed) < len(located) {
			add(r.id, "two or more resources are restricted to less nodes than available to the resources")
			for _, id := range paired {
				add(id, "at least one resource is in a negative resource affinity rule and this rule would restrict these to less nodes than available to the resources")
			}
		}
	}
	return errs
}

// ruleSet is an entry of find_disjoint_rules_resource_sets
// (src/PVE/HA/Rules/Helpers.pm): connected rules and their resources.
type ruleSet struct {
	ids       []string
	resources map[string]bool
}

func disjointSets(rules []*haRule) []ruleSet {
	var sets []ruleSet
	for _, r := range rules {
		cur := ruleSet{ids: []string{r.id}, resources: map[string]bool{}}
		for sid := range r.resources {
			cur.resources[sid] = true
		}
		var rest []ruleSet
		for _, set := range sets {
			if countCommon(set.resources, cur.resources) == 0 {
				rest = append(rest, set)
				continue
			}
			cur.ids = append(cur.ids, set.ids...)
			for sid := range set.resources {
				cur.resources[sid] = true
			}
		}
		sort.Strings(cur.ids)
		sets = append(rest, cur)
	}
	return sets
}

func countCommon(a, b map[string]bool) int {
	n := 0
	for k := range a {
		if b[k] {
			n++
		}
	}
	return n
}

func multiplePriorities(nodes map[string]int) bool {
	first, seen := 0, false
	for _, p := range nodes {
		if seen && p != first {
			return true
		}
		first, seen = p, true
	}
	return false
}
