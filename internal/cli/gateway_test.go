package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGatewayPriorities(t *testing.T) {
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
		"Lines": {
			reason: "one line per node, highest priority first, in the controller's order",
			args:   []string{"priorities", "--key", "vpc/tenant-b", "node-1", "node-2", "node-3", "node-4"},
			want:   want{out: "node-4 100\nnode-2 90\nnode-1 80\nnode-3 70\n"},
		},
		"OrderOfArguments": {
			reason: "the order does not depend on how nodes are listed",
			args:   []string{"priorities", "--key", "vpc/tenant-b", "node-3", "node-1", "node-4", "node-2"},
			want:   want{out: "node-4 100\nnode-2 90\nnode-1 80\nnode-3 70\n"},
		},
		"TwelveNodes": {
			reason: "past ten nodes the top priority is 10·n",
			args:   []string{"priorities", "--key", "vpc/x", "n00", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10", "n11"},
			want:   want{out: "n09 120\nn01 110\nn03 100\nn11 90\nn04 80\nn00 70\nn07 60\nn08 50\nn10 40\nn05 30\nn02 20\nn06 10\n"},
		},
		"JSON": {
			reason: "-o json prints node and priority objects",
			args:   []string{"priorities", "--key", "vpc/tenant-a", "node-1", "node-2", "-o", "json"},
			want:   want{out: "[\n  {\n    \"node\": \"node-1\",\n    \"priority\": 100\n  },\n  {\n    \"node\": \"node-2\",\n    \"priority\": 90\n  }\n]\n"},
		},
		"Duplicate": {
			reason: "a node listed twice is refused, exit 1",
			args:   []string{"priorities", "--key", "vpc/a", "n1", "n1"},
			want:   want{code: 1, errOut: "Error: cannot rank node \"n1\": invalid input: it is listed twice\n"},
		},
		"NoKey": {
			reason: "the key is required: a usage error",
			args:   []string{"priorities", "n1"},
			want:   want{code: 2, errOut: "Error: required flag(s) \"key\" not set\nRun 'pxsubstrate gateway priorities --help' for usage.\n"},
		},
		"NoNodes": {
			reason: "at least one node: a usage error",
			args:   []string{"priorities", "--key", "vpc/a"},
			want:   want{code: 2, errOut: "Error: requires at least 1 arg(s), only received 0\nRun 'pxsubstrate gateway priorities --help' for usage.\n"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"gateway"}, tc.args...)...)
			if diff := cmp.Diff(tc.want, want{code: code, out: out, errOut: errOut}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\ngateway %v: -want +got:\n%s", tc.reason, tc.args, diff)
			}
		})
	}
}
