package vlanalloc

import (
	"math/bits"
	"strconv"
	"strings"
)

// MinVID and MaxVID bound every ID this package hands out: 802.1Q reserves 0
// and 4095, and capmox accepts 1-4094 on a NIC.
const (
	MinVID = 1
	MaxVID = 4094
)

const setWords = 64 // 64 words of 64 bits cover IDs 0-4095

// Set is a set of VLAN IDs in 0-4095. Its zero value is empty and ready to
// use. Add, Remove, Has and Min cost O(1): a summary word records which of
// the 64 data words are non-empty, so the lowest member is two
// trailing-zero counts away. IDs outside 0-4095 are never members.
type Set struct {
	words   [setWords]uint64
	summary uint64
	n       int
}

func inSetRange(vid int) bool { return vid >= 0 && vid < setWords*64 }

// Add inserts vid and reports whether it was absent.
func (s *Set) Add(vid int) bool {
	if !inSetRange(vid) || s.Has(vid) {
		return false
	}
	w := vid >> 6
	s.words[w] |= 1 << (uint(vid) & 63)
	s.summary |= 1 << uint(w)
	s.n++
	return true
}

// Remove deletes vid and reports whether it was present.
func (s *Set) Remove(vid int) bool {
	if !s.Has(vid) {
		return false
	}
	w := vid >> 6
	s.words[w] &^= 1 << (uint(vid) & 63)
	if s.words[w] == 0 {
		s.summary &^= 1 << uint(w)
	}
	s.n--
	return true
}

// Has reports whether vid is a member.
func (s *Set) Has(vid int) bool {
	return inSetRange(vid) && s.words[vid>>6]&(1<<(uint(vid)&63)) != 0
}

// Len is the number of members.
func (s *Set) Len() int { return s.n }

// Min returns the lowest member, or false when the set is empty.
func (s *Set) Min() (int, bool) {
	if s.summary == 0 {
		return 0, false
	}
	w := bits.TrailingZeros64(s.summary)
	return w<<6 | bits.TrailingZeros64(s.words[w]), true
}

// IDs returns the members in ascending order.
func (s *Set) IDs() []int {
	out := make([]int, 0, s.n)
	for sum := s.summary; sum != 0; sum &= sum - 1 {
		w := bits.TrailingZeros64(sum)
		for word := s.words[w]; word != 0; word &= word - 1 {
			out = append(out, w<<6|bits.TrailingZeros64(word))
		}
	}
	return out
}

// Intersect returns the IDs that are members of both s and o.
func (s *Set) Intersect(o *Set) Set {
	return s.combine(o, func(a, b uint64) uint64 { return a & b })
}

// Subtract returns the members of s that are not members of o: the zone's
// VLANs that a node does not carry, for example.
func (s *Set) Subtract(o *Set) Set {
	return s.combine(o, func(a, b uint64) uint64 { return a &^ b })
}

// combine applies op to each pair of data words; the result's words are
// never set where s has none, so only s's non-empty words are visited.
func (s *Set) combine(o *Set, op func(a, b uint64) uint64) Set {
	var out Set
	for sum := s.summary; sum != 0; sum &= sum - 1 {
		w := bits.TrailingZeros64(sum)
		if word := op(s.words[w], o.words[w]); word != 0 {
			out.words[w] = word
			out.summary |= 1 << uint(w)
			out.n += bits.OnesCount64(word)
		}
	}
	return out
}

// Run is an inclusive stretch of consecutive IDs.
type Run struct {
	First int `json:"first"`
	Last  int `json:"last"`
}

// String renders a run the way vlanRanges spells it: "7" or "100-199".
func (r Run) String() string {
	if r.First == r.Last {
		return strconv.Itoa(r.First)
	}
	return strconv.Itoa(r.First) + "-" + strconv.Itoa(r.Last)
}

// Runs returns the members as ascending, maximal runs.
func (s *Set) Runs() []Run {
	var out []Run
	for _, vid := range s.IDs() {
		if n := len(out); n > 0 && out[n-1].Last == vid-1 {
			out[n-1].Last = vid
			continue
		}
		out = append(out, Run{First: vid, Last: vid})
	}
	return out
}

// String renders the set as comma-separated runs, for example "1-9,20".
func (s *Set) String() string {
	runs := s.Runs()
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}
