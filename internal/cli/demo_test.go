package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDemoCommand(t *testing.T) {
	cases := map[string]struct {
		reason string
		args   []string
		check  func(t *testing.T, out string)
	}{
		"Story": {
			reason: "the default output tells the acts and ends with the invariants table",
			args:   []string{"demo"},
			check: func(t *testing.T, out string) {
				for _, want := range []string{"== Act 1:", "== Act 4:", "== Invariants ==", "zone counts equal a recount  ",
					"HA_CHASSIS_GROUP", "True/ChassisAssigned", "GatewayReady is True/ChassisAssigned on every live network  "} {
					if !strings.Contains(out, want) {
						t.Errorf("output lacks %q:\n%s", want, out)
					}
				}
				if strings.Contains(out, "FAILED") {
					t.Errorf("an invariant failed:\n%s", out)
				}
				if !strings.HasPrefix(out, "pxsubstrate demo: the whole system on in-memory stand-ins") {
					t.Errorf("the demo does not say first what it runs on:\n%.300s", out)
				}
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if last := lines[len(lines)-1]; !strings.HasPrefix(last, "verdict: all ") || !strings.HasSuffix(last, " invariants hold") {
					t.Errorf("the last line is %q, want the verdict", last)
				}
			},
		},
		"JSON": {
			reason: "-o json prints the acts and the invariants for scripts",
			args:   []string{"demo", "-o", "json"},
			check: func(t *testing.T, out string) {
				var res struct {
					Acts       []string `json:"acts"`
					Invariants []struct {
						Name  string `json:"name"`
						Holds bool   `json:"holds"`
					} `json:"invariants"`
				}
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				if len(res.Acts) < 4 || len(res.Invariants) < 5 {
					t.Errorf("acts %v invariants %v", res.Acts, res.Invariants)
				}
				for _, inv := range res.Invariants {
					if !inv.Holds {
						t.Errorf("invariant %q failed", inv.Name)
					}
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runSim(t, "", tc.args...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", tc.reason, code, errOut)
			}
			tc.check(t, out)
		})
	}
}
