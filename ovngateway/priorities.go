package ovngateway

import (
	"cmp"
	"fmt"
	"slices"
)

const (
	// priorityStep separates neighbouring priorities.
	priorityStep = 10
	// minTopPriority is the highest priority of a group of up to 10 chassis.
	minTopPriority = 100
	// maxPriority is the largest value HA_Chassis.priority accepts.
	maxPriority = 32767
	// MaxChassis is the largest chassis set whose priorities fit HA_Chassis.
	MaxChassis = maxPriority / priorityStep
)

// Candidate is a Node that can carry gateway traffic and its OVN chassis.
// Package kubegateway picks them from Kubernetes Nodes (Candidates).
type Candidate struct {
	Node    string `json:"node"`
	Chassis string `json:"chassis"`
}

// Member is one HA_Chassis of a group: a chassis and its priority. The
// highest priority that is up is the active gateway.
type Member struct {
	Node     string `json:"node"`
	Chassis  string `json:"chassis"`
	Priority int    `json:"priority"`
}

// FNV-1a 64 parameters (the same as hash/fnv's New64a).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Score is the rendezvous score of node for key: FNV-1a 64 over the key, one
// 0x00 byte and the node name, finished with the splitmix64 mixer. It is
// hash/fnv's New64a without the allocations, which matters when thousands of
// networks are ranked on every Node change.
func Score(key, node string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * fnvPrime64
	}
	h *= fnvPrime64 // xor with the 0x00 separator changes nothing
	for i := 0; i < len(node); i++ {
		h = (h ^ uint64(node[i])) * fnvPrime64
	}
	return mix64(h)
}

// mix64 is the splitmix64 finisher.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

// Rank orders the candidates for key by descending Score, ties broken by Node
// name, and gives them priorities from max(100, 10·n) down in steps of 10,
// so every priority is distinct and positive. The order depends only on the
// set of candidates, never on the order they are given in. Adding a node
// moves to it only the keys it wins; removing one moves only the keys it led.
func Rank(key string, candidates []Candidate) ([]Member, error) {
	if err := validCandidates(candidates); err != nil {
		return nil, err
	}
	type scored struct {
		Candidate
		score uint64
	}
	s := make([]scored, len(candidates))
	for i, c := range candidates {
		s[i] = scored{Candidate: c, score: Score(key, c.Node)}
	}
	slices.SortFunc(s, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.Node, b.Node)
	})
	top := max(minTopPriority, priorityStep*len(s))
	out := make([]Member, len(s))
	for i, c := range s {
		out[i] = Member{Node: c.Node, Chassis: c.Chassis, Priority: top - priorityStep*i}
	}
	return out, nil
}

func validCandidates(candidates []Candidate) error {
	if len(candidates) > MaxChassis {
		return fmt.Errorf("cannot rank %d chassis: %w: HA_Chassis priorities fit at most %d", len(candidates), ErrInvalid, MaxChassis)
	}
	nodes := make(map[string]bool, len(candidates))
	chassis := make(map[string]bool, len(candidates))
	for _, c := range candidates {
		switch {
		case c.Node == "" || c.Chassis == "":
			return fmt.Errorf("cannot rank candidate %+v: %w: node and chassis names are required", c, ErrInvalid)
		case nodes[c.Node]:
			return fmt.Errorf("cannot rank node %q: %w: it is listed twice", c.Node, ErrInvalid)
		case chassis[c.Chassis]:
			return fmt.Errorf("cannot rank chassis %q: %w: it is listed twice", c.Chassis, ErrInvalid)
		}
		nodes[c.Node], chassis[c.Chassis] = true, true
	}
	return nil
}
