package cli

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVLANRanges(t *testing.T) {
	type want struct {
		code   int
		out    string
		errOut string
	}
	cases := map[string]struct {
		reason string
		args   []string
		want   want
	}{
		"Table": {
			reason: "the default output lists runs and the total",
			args:   []string{"ranges", "100-105", "110", "--reserved", "102,103,7"},
			want:   want{out: "RANGE    COUNT\n100-101  2\n104-105  2\n110      1\ntotal    5\n"},
		},
		"YAML": {
			reason: "-o yaml lists count, ranges and every ID",
			args:   []string{"ranges", "5-6", "-o", "yaml"},
			want:   want{out: "count: 2\nids:\n- 5\n- 6\nranges:\n- 5-6\n"},
		},
		"EverythingReserved": {
			reason: "a zone whose IDs are all reserved has none to give",
			args:   []string{"ranges", "5", "--reserved", "5", "-o", "json"},
			want:   want{out: "{\n  \"count\": 0,\n  \"ranges\": [],\n  \"ids\": []\n}\n"},
		},
		"Spaces": {
			reason: "whitespace around an entry's numbers and dash is read, as by the peer controller",
			args:   []string{"ranges", " 7 - 8 ", "10\t"},
			want:   want{out: "RANGE  COUNT\n7-8    2\n10     1\ntotal  3\n"},
		},
		"OutOfBounds": {
			reason: "the controller's exact error, exit 1",
			args:   []string{"ranges", "100", "4000-4095"},
			want:   want{code: 1, errOut: "Error: vlan range \"4000-4095\": 4095 is outside 1-4094\n"},
		},
		"NotANumber": {
			reason: "the controller's exact error, exit 1",
			args:   []string{"ranges", "abc"},
			want:   want{code: 1, errOut: "Error: vlan range \"abc\": \"abc\" is not a number\n"},
		},
		"Backwards": {
			reason: "the controller's exact error, exit 1",
			args:   []string{"ranges", "200-100"},
			want:   want{code: 1, errOut: "Error: vlan range \"200-100\" ends before it starts\n"},
		},
		"ReservedOutOfBounds": {
			reason: "a reserved ID must be a VLAN ID",
			args:   []string{"ranges", "1-10", "--reserved", "0"},
			want:   want{code: 1, errOut: "Error: invalid VLAN zone: reserved VLAN 0 is outside 1-4094\n"},
		},
		"NoRanges": {
			reason: "at least one range is a usage error",
			args:   []string{"ranges"},
			want:   want{code: 2, errOut: "Error: requires at least 1 arg(s), only received 0\nRun 'pxsubstrate vlan ranges --help' for usage.\n"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"vlan"}, tc.args...)...)
			if diff := cmp.Diff(tc.want, want{code: code, out: out, errOut: errOut}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestVLANRangesWholeSpace(t *testing.T) {
	out, _, code := run(t, "vlan", "ranges", "1-4094", "-o", "json")
	var got vlanRanges
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	if got.Count != 4094 || len(got.IDs) != 4094 || got.IDs[0] != 1 || got.IDs[4093] != 4094 || !cmp.Equal(got.Ranges, []string{"1-4094"}) {
		t.Errorf("got count %d, %d IDs, ranges %v", got.Count, len(got.IDs), got.Ranges)
	}
}
