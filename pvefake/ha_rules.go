package pvefake

import "sort"

// ruleErrors is PVE::HA::Rules->check_feasibility (src/PVE/HA/Rules.pm)
// over the enabled rules and every cluster node: per rule and property, the
// messages of each registered check, in the order the checks run (the
// node-affinity plugin's, the resource-affinity plugin's, then the global
// ones).
func (s *state) ruleErrors() map[string]map[string][]string {
	k := &ruleCheck{errs: map[string]map[string][]string{}, nodes: len(s.nodes)}
	for _, r := range s.ha().sortedRules() {
		switch {
		case r.disabled():
		case r.typ == "node-affinity":
			k.na = append(k.na, r)
		case r.opts["affinity"] == "positive":
			k.ra, k.pos = append(k.ra, r), append(k.pos, r)
		default:
			k.ra, k.neg = append(k.ra, r), append(k.neg, r)
		}
	}
	k.merged = disjointSets(k.pos)
	k.singleResourceReference()
	k.resourceCounts()
	k.interResourceAffinity()
	k.singlePriority()
	k.singleNodeAffinityPerPositive()
	k.negativeNodeAffinityConsistency()
	return k.errs
}

// ruleCheck holds the check arguments (get_check_arguments) and the errors.
type ruleCheck struct {
	na, ra, pos, neg []*haRule
	merged           []ruleSet
	nodes            int
	errs             map[string]map[string][]string
}

func (k *ruleCheck) add(id, msg string) {
	if k.errs[id] == nil {
		k.errs[id] = map[string][]string{}
	}
	k.errs[id]["resources"] = append(k.errs[id]["resources"], msg)
}

// singleResourceReference is NodeAffinity.pm's check_single_resource_reference.
func (k *ruleCheck) singleResourceReference() {
	uses := map[string][]string{}
	for _, r := range k.na {
		for sid := range r.resources {
			uses[sid] = append(uses[sid], r.id)
		}
	}
	for _, sid := range sortedKeys(uses) {
		if len(uses[sid]) > 1 {
			for _, id := range uses[sid] {
				k.add(id, "resource '"+sid+"' is already used in another node affinity rule")
			}
		}
	}
}

// resourceCounts is ResourceAffinity.pm's check_resource_affinity_resources_count
// and check_negative_resource_affinity_resources_count.
func (k *ruleCheck) resourceCounts() {
	for _, r := range k.ra {
		if len(r.resources) < 2 {
			k.add(r.id, "rule is ineffective as there are less than two resources")
		}
	}
	for _, r := range k.neg {
		if len(r.resources) > k.nodes {
			k.add(r.id, "rule defines more resources than available nodes")
		}
	}
}

// interResourceAffinity is check_inter_resource_affinity_rules_consistency.
func (k *ruleCheck) interResourceAffinity() {
	for _, set := range k.merged {
		for _, n := range k.neg {
			if countCommon(set.resources, n.resources) < 2 {
				continue
			}
			k.add(n.id, "rule shares two or more resources with a positive resource affinity rule")
			for _, id := range set.ids {
				k.add(id, "rule shares two or more resources with a negative resource affinity rule")
			}
		}
	}
}

// paired is the node-affinity rules sharing a resource with a set.
func (k *ruleCheck) paired(resources map[string]bool) []*haRule {
	var out []*haRule
	for _, n := range k.na {
		if countCommon(resources, n.resources) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// singlePriority is Rules.pm's
// check_single_priority_node_affinity_in_resource_affinity_rules.
func (k *ruleCheck) singlePriority() {
	for _, r := range k.ra {
		paired := k.paired(r.resources)
		multi := false
		for _, n := range paired {
			multi = multi || multiplePriorities(n.nodes)
		}
		if !multi {
			continue
		}
		k.add(r.id, "resources are in node affinity rules with multiple priorities")
		for _, n := range paired {
			k.add(n.id, "resources are in a resource affinity rule and cannot be in a node affinity rule with multiple priorities")
		}
	}
}

// singleNodeAffinityPerPositive is
// check_single_node_affinity_per_positive_resource_affinity_rule.
func (k *ruleCheck) singleNodeAffinityPerPositive() {
	for _, set := range k.merged {
		paired := k.paired(set.resources)
		if len(paired) < 2 {
			continue
		}
		for _, id := range set.ids {
			k.add(id, "resources are in multiple node affinity rules")
		}
		for _, n := range paired {
			k.add(n.id, "at least one resource is in a positive resource affinity rule and there are other resources in at least one other node affinity rule already")
		}
	}
}

// negativeNodeAffinityConsistency is
// check_negative_resource_affinity_node_affinity_consistency.
func (k *ruleCheck) negativeNodeAffinityConsistency() {
	for _, r := range k.neg {
		allowed, located := map[string]bool{}, map[string]bool{}
		paired := k.paired(r.resources)
		for _, n := range paired {
			for sid := range r.resources {
				if n.resources[sid] {
					located[sid] = true
				}
			}
			for node := range n.nodes {
				allowed[node] = true
			}
		}
		if len(allowed) >= len(located) {
			continue
		}
		k.add(r.id, "two or more resources are restricted to less nodes than available to the resources")
		for _, n := range paired {
			k.add(n.id, "at least one resource is in a negative resource affinity rule and this rule would restrict these to less nodes than available to the resources")
		}
	}
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
