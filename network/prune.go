package network

import (
	"encoding/json"
	"time"
)

// PruneTimers computes the prune timers a Vlan keeps in its
// proxmox.cozystack.io/deleted-subnets annotation: one per deleted subnet
// Kube-OVN still lists on the Vlan, each the RFC 3339 UTC second the
// controller first saw that subnet gone. prev is the annotation's current
// value ("" when absent), gone the deleted subnets listed now. A subnet
// already timed keeps its start; a new one starts now; a subnet no longer
// listed is dropped. A start that does not parse, lies after now, or lies
// before notBefore (the deleting network's deletionTimestamp; zero keeps
// every start) starts again now, which only makes the wait longer.
// It returns the new value ("" for no timer) and the newest start.
func PruneTimers(prev string, gone []string, now, notBefore time.Time) (value string, newest time.Time) {
	old := map[string]string{}
	if prev != "" {
		if err := json.Unmarshal([]byte(prev), &old); err != nil {
			old = map[string]string{}
		}
	}
	now = now.UTC().Truncate(time.Second)
	notBefore = notBefore.UTC().Truncate(time.Second)
	timers := make(map[string]string, len(gone))
	for _, name := range gone {
		since, err := time.Parse(time.RFC3339, old[name])
		if err != nil || since.After(now) || since.Before(notBefore) {
			since = now
		}
		since = since.UTC()
		timers[name] = since.Format(time.RFC3339)
		if since.After(newest) {
			newest = since
		}
	}
	if len(timers) == 0 {
		return "", time.Time{}
	}
	b, _ := json.Marshal(timers) // a map of strings always marshals, keys sorted
	return string(b), newest
}
