package failuredomains_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/failuredomains"
)

func TestPlan(t *testing.T) {
	type d = failuredomains.Domain
	type want struct {
		domain   string
		from, to int32
	}
	cases := map[string]struct {
		reason  string
		domains []d
		want    []want
	}{
		"Settled": {reason: "every domain online at its share: nothing to do",
			domains: []d{{Name: "a", Share: 2, Replicas: 2, Ready: 2, Online: true}, {Name: "b", Share: 2, Replicas: 2, Ready: 2, Online: true}}},
		"Lost": {reason: "a lost domain goes to 0 and its share is raised on the others at once",
			domains: []d{{Name: "a", Share: 2, Replicas: 2, Ready: 2, Online: true}, {Name: "b", Share: 2, Replicas: 2, Ready: 2, Online: true}, {Name: "c", Share: 2, Replicas: 2, Online: false}},
			want:    []want{{"a", 2, 3}, {"b", 2, 3}, {"c", 2, 0}}},
		"ReturnSurges": {reason: "a returning domain is raised first; the others keep their extra workers until it runs",
			domains: []d{{Name: "a", Share: 2, Replicas: 3, Ready: 3, Online: true}, {Name: "b", Share: 2, Replicas: 3, Ready: 3, Online: true}, {Name: "c", Share: 2, Online: true}},
			want:    []want{{"c", 0, 2}}},
		"ReturnWaits": {reason: "nothing is lowered while the returning domain's workers are not ready",
			domains: []d{{Name: "a", Share: 2, Replicas: 3, Ready: 3, Online: true}, {Name: "b", Share: 2, Replicas: 3, Ready: 3, Online: true}, {Name: "c", Share: 2, Replicas: 2, Ready: 1, Online: true}}},
		"ReturnLowers": {reason: "once the returning domain runs its share the others give their extra workers back",
			domains: []d{{Name: "a", Share: 2, Replicas: 3, Ready: 3, Online: true}, {Name: "b", Share: 2, Replicas: 3, Ready: 3, Online: true}, {Name: "c", Share: 2, Replicas: 2, Ready: 2, Online: true}},
			want:    []want{{"a", 3, 2}, {"b", 3, 2}}},
		"Uneven": {reason: "the odd worker of a lost domain goes to the online domain of the larger share",
			domains: []d{{Name: "a", Share: 2, Replicas: 2, Online: false}, {Name: "b", Share: 2, Replicas: 2, Ready: 2, Online: true}, {Name: "c", Share: 1, Replicas: 1, Ready: 1, Online: true}},
			want:    []want{{"a", 2, 0}, {"b", 2, 3}, {"c", 1, 2}}},
		"LoweringHeld": {reason: "a domain that was being lowered keeps its running workers when another one falls short again",
			domains: []d{{Name: "a", Share: 1, Replicas: 1, Ready: 2, Online: true}, {Name: "b", Share: 1, Replicas: 1, Ready: 0, Online: true}},
			want:    []want{{"a", 1, 2}}},
		"AllLost": {reason: "with no domain online there is nowhere to move the workers",
			domains: []d{{Name: "a", Share: 2, Replicas: 2}, {Name: "b", Share: 2, Replicas: 2}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []want
			for _, c := range failuredomains.Plan(tc.domains) {
				if c.Reason == "" {
					t.Errorf("change %+v has no reason", c)
				}
				got = append(got, want{c.Domain, c.From, c.To})
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nPlan: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
