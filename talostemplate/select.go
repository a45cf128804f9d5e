package talostemplate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// CapmoxVersion is the capmox release line whose selection is simulated.
type CapmoxVersion string

const (
	// CapmoxV07 is capmox v0.7.x (API v1alpha1), the line Cozystack vendors:
	// exact tag-set equality, template tags split on ';' only.
	CapmoxV07 CapmoxVersion = "v0.7"
	// CapmoxV08 is capmox v0.8 and later (API v1alpha2), with
	// templateSelector.matchPolicy.
	CapmoxV08 CapmoxVersion = "v0.8"
)

// MatchPolicy is capmox v0.8's templateSelector.matchPolicy.
type MatchPolicy string

const (
	// MatchExact means the template's tags equal the selector (the default).
	MatchExact MatchPolicy = "exact"
	// MatchUniqueSubset means the template has every selector tag, and maybe more.
	MatchUniqueSubset MatchPolicy = "uniqueSubset"
	// MatchBestSubset is like uniqueSubset, preferring fewer extra tags.
	MatchBestSubset MatchPolicy = "bestSubset"
)

// SelectOptions choose the capmox behaviour. The zero value is capmox v0.7.
type SelectOptions struct {
	Capmox CapmoxVersion
	// Policy is only meaningful on v0.8; empty means exact.
	Policy MatchPolicy
}

func (o SelectOptions) normalise() (SelectOptions, error) {
	o.Capmox = CapmoxVersion(or(string(o.Capmox), string(CapmoxV07)))
	o.Policy = MatchPolicy(or(string(o.Policy), string(MatchExact)))
	switch o.Capmox {
	case CapmoxV07, CapmoxV08:
	default:
		return o, fmt.Errorf("cannot simulate capmox %s: use %s or %s", termsafe.Quote(string(o.Capmox)), CapmoxV07, CapmoxV08)
	}
	switch o.Policy {
	case MatchExact, MatchUniqueSubset, MatchBestSubset:
	default:
		return o, fmt.Errorf("cannot simulate match policy %s: use %s, %s or %s", termsafe.Quote(string(o.Policy)), MatchExact, MatchUniqueSubset, MatchBestSubset)
	}
	if o.Capmox == CapmoxV07 && o.Policy != MatchExact {
		return o, fmt.Errorf("cannot simulate match policy %s on capmox v0.7: it has no templateSelector.matchPolicy and always compares tag sets exactly; use capmox %s", o.Policy, CapmoxV08)
	}
	return o, nil
}

// Candidate is a guest capmox looked at, or skipped, and what it saw.
type Candidate struct {
	VMResource
	// Skipped says why capmox did not compare this guest: "not a template"
	// or "no tags". Empty for compared templates.
	Skipped string `json:"skipped,omitempty"`
	// Seen are the template's tags as capmox reads them (v0.7: split on ';'
	// and sorted; v0.8: also trimmed, lower-cased and de-duplicated).
	Seen []string `json:"seen,omitempty"`
	// Missing are selector tags the template lacks.
	Missing []string `json:"missing,omitempty"`
	// Extra are template tags beyond the selector.
	Extra []string `json:"extra,omitempty"`
	// Counted is true when capmox counted the template as a match.
	Counted bool `json:"counted"`
}

// Selection is capmox's decision and the material to explain it.
type Selection struct {
	Capmox CapmoxVersion `json:"capmox"`
	Policy MatchPolicy   `json:"matchPolicy"`
	// Requested is the selector as given.
	Requested []string `json:"requested"`
	// Selector is the selector as capmox compares it: lower-cased, sorted, de-duplicated.
	Selector []string `json:"selector"`
	// Count is how many templates capmox counted; it clones only when Count is 1.
	Count int `json:"count"`
	// Template is the template capmox clones; nil when Count is not 1.
	Template *VMResource `json:"template,omitempty"`
	// Candidates are every template and every other guest carrying the selector's tags, in listing order.
	Candidates []Candidate `json:"candidates"`
}

// Select decides which template capmox clones for the matchTags selector,
// over the guests of GET /cluster/resources?type=vm in the order PVE lists
// them. When the selector does not name exactly one template it returns the
// Selection together with a *NotFoundError whose text is capmox's own.
func Select(resources []VMResource, selector []string, opts SelectOptions) (Selection, error) {
	opts, err := opts.normalise()
	if err != nil {
		return Selection{}, err
	}
	sel := Selection{Capmox: opts.Capmox, Policy: opts.Policy, Requested: slices.Clone(selector), Selector: capmoxSelector(selector)}
	best := math.MaxInt
	for _, r := range resources {
		c := Candidate{VMResource: r}
		switch {
		case r.Template == 0:
			c.Skipped = "not a template"
		case r.Tags == "":
			c.Skipped = "no tags"
		default:
			c.Seen = seenTags(r.Tags, opts.Capmox)
			c.Missing = minus(sel.Selector, c.Seen)
			c.Extra = minus(c.Seen, sel.Selector)
			c.Counted = counts(c, opts, sel.Selector, &best)
		}
		if c.Counted {
			sel.Count++
			sel.Template = &c.VMResource
		}
		if r.Template != 0 || carriesAll(r.Tags, sel.Selector) {
			sel.Candidates = append(sel.Candidates, c)
		}
	}
	if sel.Count != 1 {
		sel.Template = nil
		shown := strings.Join(sel.Selector, ";")
		if opts.Capmox == CapmoxV07 {
			shown = strings.Join(selector, ";")
		}
		return sel, &NotFoundError{Count: sel.Count, Tags: shown}
	}
	return sel, nil
}

// SelectFrom lists the cluster's guests through l and selects from them.
func SelectFrom(ctx context.Context, l ResourceLister, selector []string, opts SelectOptions) (Selection, error) {
	rs, err := l.ListVMResources(ctx)
	if err != nil {
		return Selection{}, fmt.Errorf("cannot list cluster resources: %w", err)
	}
	return Select(rs, selector, opts)
}

// counts applies capmox's comparison to a compared template. best carries
// the smallest extra-tag count seen so far for bestSubset; as in capmox, a
// better candidate after a worse one does not reset the count of matches.
func counts(c Candidate, opts SelectOptions, selector []string, best *int) bool {
	if opts.Capmox == CapmoxV07 {
		return slices.Equal(c.Seen, selector)
	}
	if len(c.Missing) > 0 {
		return false
	}
	distance := len(c.Seen) - len(selector)
	switch opts.Policy {
	case MatchExact:
		return distance == 0
	case MatchBestSubset:
		if distance > *best {
			return false
		}
		*best = distance
	}
	return true
}

// carriesAll reports whether a guest's tag string, read loosely, holds every
// selector tag: a guest that is not a template but would otherwise match.
func carriesAll(pve string, selector []string) bool {
	return pve != "" && len(minus(selector, looseTagSet(strings.Split(pve, ";")))) == 0
}

// capmoxSelector lower-cases (with Go's Unicode mapping, as capmox does),
// sorts and de-duplicates the selector. Nothing is trimmed.
func capmoxSelector(tags []string) []string {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = strings.ToLower(t)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// seenTags reads a template's tag string as the capmox version does.
func seenTags(pve string, v CapmoxVersion) []string {
	parts := strings.Split(pve, ";")
	if v == CapmoxV07 {
		slices.Sort(parts)
		return parts
	}
	for i, p := range parts {
		parts[i] = strings.ToLower(strings.TrimSpace(p))
	}
	slices.Sort(parts)
	return slices.Compact(parts)
}

// minus returns the distinct elements of a that are not in b, sorted.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}
