package talostemplate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Explain says in plain words why capmox chose what it chose: which
// template has which extra or missing tag, a template whose tags are
// separated by commas, guests that match but are not templates, and several
// templates sharing one tag set. The lines follow the Selection's candidate
// order and are meant for people, not parsers. Every name, tag and list
// from the guests or the selector is cut as termsafe cuts a value, so a
// line stays a line whatever the cluster or the selector holds.
func Explain(sel Selection) []string {
	var out []string
	if sel.Count == 1 {
		t := sel.Template
		out = append(out, fmt.Sprintf("capmox %s clones template %s from node %s", sel.Capmox, guest(*t), termsafe.Cut(t.Node)))
		return append(out, notTemplates(sel)...)
	}
	rule := "every template tag must be in the selector and every selector tag on the template (set equality, not containment)"
	if sel.Capmox == CapmoxV08 && sel.Policy != MatchExact {
		rule = "the template must carry every selector tag (" + string(sel.Policy) + ")"
	}
	out = append(out, fmt.Sprintf("capmox %s needs exactly one template for the selector %s across the whole cluster and counted %d; %s",
		sel.Capmox, termsafe.Cut(strings.Join(sel.Selector, ";")), sel.Count, rule))
	var counted []Candidate
	templates := 0
	for _, c := range sel.Candidates {
		if c.Template == 0 {
			continue
		}
		templates++
		if c.Counted {
			counted = append(counted, c)
			continue
		}
		out = append(out, explainMiss(c, sel)...)
	}
	if templates == 0 {
		out = append(out, "the cluster lists no template at all: build one with pxsubstrate template print|create")
	}
	out = append(out, explainNodeTemplates(sel)...)
	if len(counted) > 1 {
		out = append(out, explainMany(counted, sel)...)
	}
	return append(out, notTemplates(sel)...)
}

// explainNodeTemplates names the templates that carry the selector and,
// beyond it, only their node's tag: the templates of each node's local
// storage, which a pool selects with proxmox.localTemplates.
func explainNodeTemplates(sel Selection) []string {
	var names []string
	for _, c := range sel.Candidates {
		if c.Template != 0 && !c.Counted && nodeTemplate(c) {
			names = append(names, guest(c.VMResource)+" on "+termsafe.Cut(c.Node))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s carry these tags and their node's tag: they are the templates of each node's local storage, which a pool selects with proxmox.localTemplates: true "+
		"(each node's MachineDeployment adds its node's tag; pxsubstrate template select --per-node shows each node's)", strings.Join(names, ", "))}
}

// nodeTemplate reports whether c carries the selector and, beyond it,
// only a node tag.
func nodeTemplate(c Candidate) bool {
	if len(c.Missing) > 0 || len(c.Extra) != 1 {
		return false
	}
	_, ok := capmox.ParseNodeTag(c.Extra[0])
	return ok
}

func explainMiss(c Candidate, sel Selection) []string {
	name := "template " + guest(c.VMResource) + " on " + termsafe.Cut(c.Node)
	if c.Skipped == "no tags" {
		return []string{name + " has no tags, and capmox skips untagged templates"}
	}
	if comma := commaTags(c.Seen); len(comma) > 0 {
		reads := "reads " + quoteAll(comma) + " as a single tag"
		if len(comma) > 1 {
			reads = "reads each of " + quoteAll(comma) + " as a single tag"
		}
		return []string{fmt.Sprintf("%s has its tags separated by commas: PVE separates tags with ';', so capmox %s; set them with qm set %d --tags '%s'",
			name, reads, c.VMID, termsafe.Cut(strings.ReplaceAll(c.Tags, ",", ";")))}
	}
	var out []string
	if sel.Capmox == CapmoxV07 {
		out = append(out, v07Quirks(name, c)...)
	}
	if len(c.Missing) > 0 {
		out = append(out, fmt.Sprintf("%s lacks %s", name, quoteAll(c.Missing)))
	}
	if len(c.Extra) > 0 && (sel.Capmox == CapmoxV07 || sel.Policy == MatchExact) && !nodeTemplate(c) {
		out = append(out, fmt.Sprintf("%s has the extra tag(s) %s: add them to templateTags or remove them from the template", name, quoteAll(c.Extra)))
	}
	if len(c.Missing) == 0 && len(c.Extra) > 0 && sel.Policy == MatchBestSubset {
		out = append(out, fmt.Sprintf("%s has %d extra tag(s), more than a template seen before it in the listing", name, len(c.Extra)))
	}
	return out
}

// v07Quirks explains the template-side readings of capmox v0.7 that differ
// from what a person sees: no lower-casing, no trimming, no de-duplication.
func v07Quirks(name string, c Candidate) []string {
	var out []string
	for i, t := range c.Seen {
		switch {
		case t != strings.TrimSpace(t):
			out = append(out, fmt.Sprintf("%s has the tag %s with spaces around it, which capmox v0.7 does not trim", name, termsafe.Quote(t)))
		case t != strings.ToLower(t):
			out = append(out, fmt.Sprintf("%s has the tag %s with upper-case letters; capmox v0.7 lower-cases the selector but not the template's tags", name, termsafe.Quote(t)))
		case t == "":
			out = append(out, name+" has an empty tag (two ';' in a row or a ';' at an end), which capmox v0.7 keeps")
		case i > 0 && c.Seen[i-1] == t:
			out = append(out, fmt.Sprintf("%s lists the tag %s twice, and capmox v0.7 does not de-duplicate the template's tags", name, termsafe.Quote(t)))
		}
	}
	return out
}

func explainMany(counted []Candidate, sel Selection) []string {
	names := make([]string, len(counted))
	nodes := map[string]bool{}
	for i, c := range counted {
		names[i] = guest(c.VMResource) + " on " + termsafe.Cut(c.Node)
		nodes[c.Node] = true
	}
	out := []string{fmt.Sprintf("%d templates match: %s; capmox requires exactly one template for a tag set in the whole cluster, so give each its own tags or remove all but one",
		len(counted), termsafe.Cut(strings.Join(names, ", ")))}
	if len(nodes) == len(counted) && len(counted) > 1 {
		out = append(out, "each copy sits on its own node, as local storage needs, but capmox resolves the selector cluster-wide: "+
			"build them with template create --per-node, which tags each with its node, and set the pool's proxmox.localTemplates (one MachineDeployment per node selects its node's template), or keep one template on shared storage")
	}
	if sel.Policy == MatchBestSubset {
		extras := map[int]bool{}
		for _, c := range counted {
			extras[len(c.Extra)] = true
		}
		if len(extras) > 1 {
			out = append(out, "capmox's bestSubset keeps counting the earlier, worse matches when a better one follows in the listing, so the answer depends on the order PVE lists the guests in")
		}
	}
	return out
}

func notTemplates(sel Selection) []string {
	var out []string
	for _, c := range sel.Candidates {
		if c.Template == 0 {
			out = append(out, fmt.Sprintf("VM %s on %s carries the selector's tags but is not a template, and capmox only clones templates (qm template %d converts it)",
				guest(c.VMResource), termsafe.Cut(c.Node), c.VMID))
		}
	}
	return out
}

func guest(r VMResource) string {
	if r.Name == "" {
		return fmt.Sprint(r.VMID)
	}
	return fmt.Sprintf("%d (%s)", r.VMID, termsafe.Cut(r.Name))
}

func commaTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if strings.Contains(t, ",") {
			out = append(out, t)
		}
	}
	return slices.Compact(out)
}

// quoteAll quotes each tag and joins them, the whole cut as termsafe cuts
// a value: 15,000 missing tags are a line, not a page.
func quoteAll(tags []string) string {
	q := make([]string, len(tags))
	for i, t := range tags {
		q[i] = termsafe.Quote(t)
	}
	return termsafe.Cut(strings.Join(q, ", "))
}
