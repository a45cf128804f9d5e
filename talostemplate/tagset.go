package talostemplate

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// CheckTagSetFree returns a *TagSetTakenError when a template in resources
// already carries the tag set tags. capmox needs exactly one template per
// tag set across the whole cluster, so a second one would stop every pool
// that selects it with "found 2 VM templates".
//
// A template's tag string is read loosely: split on ';', trimmed,
// lower-cased, empty entries dropped, duplicates ignored. That is equal to
// tags whenever any capmox version would find the two sets equal. Guests that
// are not templates do not count.
func CheckTagSetFree(resources []VMResource, tags []string) error {
	want := looseTagSet(tags)
	var held []VMResource
	for _, r := range resources {
		if r.Template != 0 && r.Tags != "" && sameTagSet(r.Tags, want) {
			held = append(held, r)
		}
	}
	if len(held) == 0 {
		return nil
	}
	slices.SortFunc(held, func(a, b VMResource) int { return cmp.Compare(a.VMID, b.VMID) })
	return &TagSetTakenError{Tags: strings.Join(want, ";"), Templates: held}
}

// looseTagSet trims, lower-cases, drops empty entries, sorts and de-duplicates.
func looseTagSet(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sameTagSet reports whether the PVE tag string pve, read loosely, is the
// set want (which looseTagSet produced). It allocates nothing for ASCII tags
// and sets of up to 64 tags: it is called once per guest of the cluster.
func sameTagSet(pve string, want []string) bool {
	var small uint64
	var large []bool
	if len(want) > 64 {
		large = make([]bool, len(want))
	}
	for part := range strings.SplitSeq(pve, ";") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		if needsLower(part) {
			part = strings.ToLower(part)
		}
		i, ok := slices.BinarySearch(want, part)
		if !ok {
			return false
		}
		if large != nil {
			large[i] = true
		} else {
			small |= 1 << i
		}
	}
	if large != nil {
		return !slices.Contains(large, false)
	}
	return small == (^uint64(0))>>(64-len(want)) // all of want seen; 0 for an empty want
}

func needsLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return true
		}
	}
	return false
}
