package network_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pxsubstrate/pxsubstrate/network"
)

func TestPruneTimers(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	now := t0.Add(5 * time.Minute)
	cases := map[string]struct {
		reason    string
		prev      string
		gone      []string
		notBefore time.Time
		want      string
		newest    time.Time
	}{
		"NewTimer": {
			reason: "a subnet seen gone for the first time starts now",
			gone:   []string{"subnet-a"}, want: `{"subnet-a":"2026-05-01T12:05:00Z"}`, newest: now,
		},
		"KeepsStart": {
			reason: "a timed subnet keeps its start across passes and restarts",
			prev:   `{"subnet-a":"2026-05-01T12:00:00Z"}`, gone: []string{"subnet-a"},
			want: `{"subnet-a":"2026-05-01T12:00:00Z"}`, newest: t0,
		},
		"DropsPruned": {
			reason: "a subnet Kube-OVN pruned loses its timer; the newest start decides",
			prev:   `{"subnet-a":"2026-05-01T12:00:00Z","subnet-b":"2026-05-01T12:01:00Z"}`, gone: []string{"subnet-a"},
			want: `{"subnet-a":"2026-05-01T12:00:00Z"}`, newest: t0,
		},
		"NoneLeft": {
			reason: "no deleted subnet listed means no annotation",
			prev:   `{"subnet-a":"2026-05-01T12:00:00Z"}`,
		},
		"OlderThanDeletion": {
			reason:    "a timer from before the network was deleted belongs to someone else and restarts",
			prev:      `{"subnet-a":"2026-05-01T12:00:00Z"}`,
			gone:      []string{"subnet-a"},
			notBefore: t0.Add(time.Minute),
			want:      `{"subnet-a":"2026-05-01T12:05:00Z"}`, newest: now,
		},
		"Future": {
			reason: "a start after now restarts",
			prev:   `{"subnet-a":"2026-05-01T13:00:00Z"}`, gone: []string{"subnet-a"},
			want: `{"subnet-a":"2026-05-01T12:05:00Z"}`, newest: now,
		},
		"Garbage": {
			reason: "an annotation that does not parse restarts every timer",
			prev:   `{not json`, gone: []string{"subnet-b", "subnet-a"},
			want: `{"subnet-a":"2026-05-01T12:05:00Z","subnet-b":"2026-05-01T12:05:00Z"}`, newest: now,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, newest := network.PruneTimers(tc.prev, tc.gone, now, tc.notBefore)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: value -want +got:\n%s", tc.reason, diff)
			}
			if !newest.Equal(tc.newest) {
				t.Errorf("%s: newest %s, want %s", tc.reason, newest, tc.newest)
			}
		})
	}
}

// FuzzPruneTimers: whatever the annotation holds, the result names exactly
// the gone subnets, each with a start between notBefore and now, and applying
// it again changes nothing (idempotent).
func FuzzPruneTimers(f *testing.F) {
	f.Add(`{"subnet-a":"2026-05-01T12:00:00Z"}`, "subnet-a", int64(0))
	f.Add(`{"x":"nope"}`, "x", int64(30))
	f.Add(`[]`, "", int64(-30))
	now := time.Date(2026, 5, 1, 12, 5, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, prev, gone string, skew int64) {
		notBefore := now.Add(time.Duration(skew%600) * time.Second)
		if notBefore.After(now) {
			notBefore = now
		}
		var names []string
		if len(validation.IsDNS1123Subdomain(gone)) > 0 && gone != "" {
			return // subnet names are Kubernetes object names
		}
		if gone != "" {
			names = []string{gone}
		}
		got, _ := network.PruneTimers(prev, names, now, notBefore)
		if len(names) == 0 {
			if got != "" {
				t.Fatalf("no gone subnet must give no annotation, got %q", got)
			}
			return
		}
		m := map[string]string{}
		if err := json.Unmarshal([]byte(got), &m); err != nil || len(m) != 1 {
			t.Fatalf("annotation %q must map exactly the gone subnet: %v", got, err)
		}
		at, err := time.Parse(time.RFC3339, m[gone])
		if err != nil || at.After(now) || at.Before(notBefore.Truncate(time.Second)) {
			t.Fatalf("start %q outside [%s, %s]", m[gone], notBefore, now)
		}
		again, _ := network.PruneTimers(got, names, now, notBefore)
		if again != got {
			t.Fatalf("not idempotent: %q then %q", got, again)
		}
	})
}
