package vlanalloc

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseRange parses one vlanRanges entry: a single ID ("120") or an inclusive
// range ("101-199"), each bound a decimal number in 1-4094. Whitespace around
// the entry, its numbers and its dash is ignored (" 7 - 8 " is 7-8), as by
// Cozystack's proxmox-network controller; the CRD's pattern refuses such an
// entry at the API all the same. It returns a *RangeError otherwise, naming
// the entry without its outer whitespace.
func ParseRange(r string) (first, last int, err error) {
	r = strings.TrimSpace(r)
	lo, hi, isRange := strings.Cut(r, "-")
	if first, err = parseBound(r, lo); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return first, first, nil
	}
	if last, err = parseBound(r, hi); err != nil {
		return 0, 0, err
	}
	if last < first {
		return 0, 0, &RangeError{Range: r, Problem: Backwards}
	}
	return first, last, nil
}

func parseBound(r, bound string) (int, error) {
	s := strings.TrimSpace(bound)
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, &RangeError{Range: r, Value: bound, Problem: NotANumber}
	}
	n, err := strconv.Atoi(s)
	if err != nil { // only digits, so the number is too large for an int
		return 0, &RangeError{Range: r, Value: s, Problem: OutOfBounds}
	}
	if n < MinVID || n > MaxVID {
		return 0, &RangeError{Range: r, Value: strconv.Itoa(n), Problem: OutOfBounds}
	}
	return n, nil
}

// ParseRanges parses every entry and returns their union: de-duplicated,
// and in ascending order when read with Set.IDs. The first bad entry stops
// it with that entry's *RangeError.
func ParseRanges(ranges []string) (Set, error) {
	var s Set
	for _, r := range ranges {
		first, last, err := ParseRange(r)
		if err != nil {
			return Set{}, err
		}
		for vid := first; vid <= last; vid++ {
			s.Add(vid)
		}
	}
	return s, nil
}

// Allocatable returns the IDs of ranges minus reserved: the IDs a zone with
// these settings may hand out. A reserved ID outside 1-4094 is an error
// wrapping ErrInvalidZone; a reserved ID outside the ranges is harmless.
func Allocatable(ranges []string, reserved []int) (Set, error) {
	s, err := ParseRanges(ranges)
	if err != nil {
		return Set{}, err
	}
	for _, vid := range reserved {
		if vid < MinVID || vid > MaxVID {
			return Set{}, fmt.Errorf("%w: reserved VLAN %d is outside %d-%d", ErrInvalidZone, vid, MinVID, MaxVID)
		}
		s.Remove(vid)
	}
	return s, nil
}
