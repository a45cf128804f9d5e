package vlanalloc

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRanges(t *testing.T) {
	type want struct {
		runs string
		n    int
		err  string
	}
	cases := map[string]struct {
		reason string
		ranges []string
		want   want
	}{
		"Single":      {reason: "a single ID is a range of one", ranges: []string{"120"}, want: want{runs: "120", n: 1}},
		"Inclusive":   {reason: "both bounds belong to the range", ranges: []string{"101-199"}, want: want{runs: "101-199", n: 99}},
		"Everything":  {reason: "1-4094 is the whole space", ranges: []string{"1-4094"}, want: want{runs: "1-4094", n: 4094}},
		"Overlapping": {reason: "overlaps are de-duplicated", ranges: []string{"10-20", "15-25", "20"}, want: want{runs: "10-25", n: 16}},
		"Unsorted":    {reason: "the result is sorted whatever the input order", ranges: []string{"300", "5-6", "100-101"}, want: want{runs: "5-6,100-101,300", n: 5}},
		"LeadingZero": {reason: "leading zeros are decimal, not octal", ranges: []string{"0010-012"}, want: want{runs: "10-12", n: 3}},
		"Empty":       {reason: "no ranges is an empty set, not an error", ranges: nil, want: want{runs: ""}},
		"Zero": {reason: "0 is untagged, never a VLAN", ranges: []string{"0-10"},
			want: want{err: `vlan range "0-10": 0 is outside 1-4094`}},
		"TooHigh": {reason: "4095 is reserved by 802.1Q", ranges: []string{"4000-4095"},
			want: want{err: `vlan range "4000-4095": 4095 is outside 1-4094`}},
		"Huge": {reason: "a number too large for an int is still out of bounds", ranges: []string{"99999999999999999999999"},
			want: want{err: `vlan range "99999999999999999999999": 99999999999999999999999 is outside 1-4094`}},
		"NotANumber": {reason: "letters are named", ranges: []string{"1-abc"},
			want: want{err: `vlan range "1-abc": "abc" is not a number`}},
		"Negative": {reason: "a leading minus leaves an empty first bound", ranges: []string{"-5"},
			want: want{err: `vlan range "-5": "" is not a number`}},
		"TwoDashes": {reason: "only one dash splits a range", ranges: []string{"1-2-3"},
			want: want{err: `vlan range "1-2-3": "2-3" is not a number`}},
		"Spaces": {reason: "whitespace around the entry, its numbers and its dash is ignored, as by the peer", ranges: []string{" 7 - 8 ", "\t10\n", "12 -12", "14- 15"},
			want: want{runs: "7-8,10,12,14-15", n: 6}},
		"SpaceInside": {reason: "a space inside a number still splits it", ranges: []string{" 1 0 "},
			want: want{err: `vlan range "1 0": "1 0" is not a number`}},
		"SpaceNamed": {reason: "an error names the entry without its outer whitespace, the bound as written", ranges: []string{" 7 - x "},
			want: want{err: `vlan range "7 - x": " x" is not a number`}},
		"OnlySpace": {reason: "an entry of spaces has no number", ranges: []string{"  "},
			want: want{err: `vlan range "": "" is not a number`}},
		"Plus": {reason: "a sign is not a digit", ranges: []string{"+7"},
			want: want{err: `vlan range "+7": "+7" is not a number`}},
		"Backwards": {reason: "a range must not end before it starts", ranges: []string{"200-100"},
			want: want{err: `vlan range "200-100" ends before it starts`}},
		"FirstErrorWins": {reason: "the first bad entry is reported", ranges: []string{"10", "x", "0"},
			want: want{err: `vlan range "x": "x" is not a number`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := ParseRanges(tc.ranges)
			got := want{runs: s.String(), n: s.Len()}
			if err != nil {
				got = want{err: err.Error()}
				if !errors.Is(err, ErrInvalidRange) {
					t.Errorf("%s: error %v does not wrap ErrInvalidRange", tc.reason, err)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s: ParseRanges(%q): -want +got:\n%s", tc.reason, tc.ranges, diff)
			}
		})
	}
}

func TestAllocatable(t *testing.T) {
	cases := map[string]struct {
		reason   string
		ranges   []string
		reserved []int
		want     string
		err      string
	}{
		"RemovesReserved":      {reason: "reserved IDs are not allocatable", ranges: []string{"100-105"}, reserved: []int{101, 104}, want: "100,102-103,105"},
		"ReservedOutsideRange": {reason: "reserving an ID outside the ranges is harmless", ranges: []string{"100-101"}, reserved: []int{7}, want: "100-101"},
		"ReservedOutOfBounds":  {reason: "a reserved ID must be a VLAN ID", ranges: []string{"1"}, reserved: []int{4095}, err: "invalid VLAN zone: reserved VLAN 4095 is outside 1-4094"},
		"RangeError":           {reason: "range errors pass through unchanged", ranges: []string{"5-1"}, err: `vlan range "5-1" ends before it starts`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := Allocatable(tc.ranges, tc.reserved)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.err, gotErr); diff != "" {
				t.Fatalf("%s: error: -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, s.String()); err == nil && diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// FuzzParseRanges checks that any input either fails with one of the three
// messages or yields IDs in 1-4094 whose rendering parses back to the same
// set.
func FuzzParseRanges(f *testing.F) {
	for _, seed := range []string{"1", "1-4094", "100-199,200", "0", "4095", "a-b", "5-1", "-", "1--2", "007-8", "99999999999999999999", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ranges := strings.Split(in, ",")
		s, err := ParseRanges(ranges)
		if err != nil {
			var re *RangeError
			if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "vlan range ") {
				t.Fatalf("ParseRanges(%q): unexpected error %v", ranges, err)
			}
			msg := err.Error()
			if !strings.HasSuffix(msg, " is outside 1-4094") && !strings.HasSuffix(msg, " is not a number") && !strings.HasSuffix(msg, " ends before it starts") {
				t.Fatalf("ParseRanges(%q): message %q is none of the three", ranges, msg)
			}
			return
		}
		for _, vid := range s.IDs() {
			if vid < MinVID || vid > MaxVID {
				t.Fatalf("ParseRanges(%q) gave %d", ranges, vid)
			}
		}
		if s.Len() == 0 {
			return
		}
		again, err := ParseRanges(strings.Split(s.String(), ","))
		if err != nil || again != s {
			t.Fatalf("round trip of %q via %q: %v", in, s.String(), err)
		}
	})
}
