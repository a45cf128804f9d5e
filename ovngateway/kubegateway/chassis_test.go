package kubegateway_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
)

const readyLabel = "pxtenant.provider-network.kubernetes.io/ready"

func node(name, chassis, ready string, deleting bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	if ready != "" {
		n.Labels[readyLabel] = ready
	}
	if chassis != "" {
		n.Annotations[kubegateway.ChassisAnnotation] = chassis
	}
	if deleting {
		now := metav1.Now()
		n.DeletionTimestamp = &now
	}
	return n
}

func TestCandidates(t *testing.T) {
	cases := map[string]struct {
		reason string
		nodes  []*corev1.Node
		want   []ovngateway.Candidate
	}{
		"Eligible": {
			reason: "ready nodes with a chassis are candidates, sorted by name",
			nodes:  []*corev1.Node{node("b", "ch-b", "true", false), node("a", "ch-a", "true", false)},
			want:   []ovngateway.Candidate{{Node: "a", Chassis: "ch-a"}, {Node: "b", Chassis: "ch-b"}},
		},
		"Skipped": {
			reason: "not ready, ready=false, no chassis, blank chassis and deleting nodes are skipped",
			nodes: []*corev1.Node{
				node("no-label", "ch-1", "", false), node("not-ready", "ch-2", "false", false),
				node("no-chassis", "", "true", false), node("blank", "  ", "true", false),
				node("deleting", "ch-3", "true", true), node("ok", "ch-4", "true", false),
			},
			want: []ovngateway.Candidate{{Node: "ok", Chassis: "ch-4"}},
		},
		"SharedChassis": {
			reason: "a chassis shared by two nodes is counted once, under the first node name",
			nodes:  []*corev1.Node{node("z", "ch-1", "true", false), node("m", "ch-1", "true", false), node("q", "ch-2", "true", false)},
			want:   []ovngateway.Candidate{{Node: "m", Chassis: "ch-1"}, {Node: "q", Chassis: "ch-2"}},
		},
		"OtherProviderNetwork": {
			reason: "the ready label of another provider network does not count",
			nodes: []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "x",
				Labels:      map[string]string{"other.provider-network.kubernetes.io/ready": "true"},
				Annotations: map[string]string{kubegateway.ChassisAnnotation: "ch-x"}}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, kubegateway.Candidates("pxtenant", tc.nodes)); diff != "" {
				t.Errorf("%s\nCandidates: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCandidatesProperties checks Candidates against a trivial model on
// random nodes.
func TestCandidatesProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		var nodes []*corev1.Node
		for i := range n {
			nodes = append(nodes, node(
				rapid.StringMatching(`n[0-9]{1,2}`).Draw(t, "name")+string(rune('a'+i)),
				rapid.SampledFrom([]string{"", "ch-1", "ch-2", "ch-3", "ch-4"}).Draw(t, "chassis"),
				rapid.SampledFrom([]string{"", "true", "false"}).Draw(t, "ready"),
				rapid.Bool().Draw(t, "deleting"),
			))
		}
		got := kubegateway.Candidates("pxtenant", nodes)
		// Model: the eligible node with the smallest name wins each chassis.
		best := map[string]string{}
		for _, nd := range nodes {
			ch := nd.Annotations[kubegateway.ChassisAnnotation]
			if nd.Labels[readyLabel] != "true" || ch == "" || nd.DeletionTimestamp != nil {
				continue
			}
			if cur, ok := best[ch]; !ok || nd.Name < cur {
				best[ch] = nd.Name
			}
		}
		if len(got) != len(best) {
			t.Fatalf("got %d candidates, the model has %d: %v vs %v", len(got), len(best), got, best)
		}
		for i, c := range got {
			if best[c.Chassis] != c.Node {
				t.Fatalf("chassis %q went to %q, want %q", c.Chassis, c.Node, best[c.Chassis])
			}
			if i > 0 && got[i-1].Node >= c.Node {
				t.Fatalf("candidates are not sorted by node name: %v", got)
			}
		}
	})
}

func TestNodeChanged(t *testing.T) {
	base := node("a", "ch-a", "true", false)
	cases := map[string]struct {
		reason string
		mutate func(n *corev1.Node)
		want   bool
	}{
		"Nothing":      {"an unrelated label change does not matter", func(n *corev1.Node) { n.Labels["x"] = "y" }, false},
		"ReadyLabel":   {"the ready label changed", func(n *corev1.Node) { n.Labels[readyLabel] = "false" }, true},
		"Chassis":      {"the chassis annotation changed", func(n *corev1.Node) { n.Annotations[kubegateway.ChassisAnnotation] = "ch-b" }, true},
		"Deleting":     {"the node started terminating", func(n *corev1.Node) { now := metav1.Now(); n.DeletionTimestamp = &now }, true},
		"Status":       {"a status change does not matter", func(n *corev1.Node) { n.Status.Phase = corev1.NodeRunning }, false},
		"LabelRemoved": {"the ready label disappeared", func(n *corev1.Node) { delete(n.Labels, readyLabel) }, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			updated := base.DeepCopy()
			tc.mutate(updated)
			if got := kubegateway.NodeChanged("pxtenant", base, updated); got != tc.want {
				t.Errorf("%s: NodeChanged = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}
