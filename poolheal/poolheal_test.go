package poolheal_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/poolheal"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// TestPlan: each fault with its action when the pool heals it, what it
// waits for when it may not act yet, and the controls left alone.
func TestPlan(t *testing.T) {
	old := t0.Add(-time.Hour)
	all := poolheal.Kinds
	cases := map[string]struct {
		pool  poolheal.Pool
		acts  []poolheal.Kind
		waits []string
	}{
		"LostClone": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 101}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Node: "pve1", Created: old, NodeOnline: true}, {VMID: 101, Name: "w", Running: true, Created: old, NodeOnline: true}}},
			acts: []poolheal.Kind{poolheal.KindDestroyLostClone}},
		"LostCloneYoung": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 101}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Created: t0.Add(-time.Minute), NodeOnline: true}}},
			waits: []string{"VM is younger than the grace period 5m0s"}},
		"LostCloneLocked": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 101}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Lock: "migrate", Created: old, NodeOnline: true}}},
			waits: []string{"VM is locked (migrate)"}},
		"CloneUnderWay": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w"}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Created: old, NodeOnline: true}}}},
		"ForeignName": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 101}},
			VMs: []poolheal.VM{{VMID: 100, Name: "other", Created: old, NodeOnline: true}}}},
		"Template": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 101}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Template: true, Created: old, NodeOnline: true}}}},
		"NeverStarted": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 100, Provisioned: true}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Created: old, NodeOnline: true}}},
			acts: []poolheal.Kind{poolheal.KindStartStopped}},
		"StoppedByTag": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 100, Provisioned: true}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Tags: []string{poolheal.StoppedTag}, Created: old, NodeOnline: true}}}},
		"StoppedByAnnotation": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 100, Provisioned: true, StoppedOnPurpose: true}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Created: old, NodeOnline: true}}}},
		"StoppedWithNode": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 100, Provisioned: true, HasNode: true}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Created: old, NodeOnline: true}}}},
		"StoppedNodeOffline": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 100, Provisioned: true}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Node: "pve2", Created: old}}},
			waits: []string{"node pve2 is offline"}},
		"DeleteFailed": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 100, Deleting: true, DeleteFailedSince: old}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Node: "pve2", Created: old, NodeOnline: true}}},
			acts: []poolheal.Kind{poolheal.KindRetryDelete}},
		"DeleteRetriedRecently": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 100, Deleting: true, DeleteFailedSince: old, RetriedAt: t0.Add(-time.Second)}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Node: "pve2", Created: old, NodeOnline: true}}},
			waits: []string{"capmox was asked to try again at 2026-12-06T11:59:59Z"}},
		"DeleteRetriedLongAgo": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 100, Deleting: true, DeleteFailedSince: old, RetriedAt: t0.Add(-poolheal.RetryEvery)}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Node: "pve2", Created: old, NodeOnline: true}}},
			acts: []poolheal.Kind{poolheal.KindRetryDelete}},
		"DeleteFailedNodeOffline": {pool: poolheal.Pool{Machines: []poolheal.Machine{{Name: "w", VMID: 100, Deleting: true, DeleteFailedSince: old}},
			VMs: []poolheal.VM{{VMID: 100, Name: "w", Node: "pve2", Created: old}}},
			waits: []string{"node pve2 is offline"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.pool.Now, tc.pool.Enabled = t0, all
			acts, waits := poolheal.Plan(tc.pool)
			var kinds []poolheal.Kind
			for _, a := range acts {
				if a.Reason == "" || a.Machine == "" {
					t.Errorf("action without reason or machine: %+v", a)
				}
				kinds = append(kinds, a.Kind)
			}
			var whys []string
			for _, w := range waits {
				whys = append(whys, w.Why)
			}
			if diff := cmp.Diff(tc.acts, kinds); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.waits, whys); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			// Off, each action becomes a wait that says so.
			tc.pool.Enabled = nil
			if acts, waits := poolheal.Plan(tc.pool); len(acts) != 0 || len(waits) != len(tc.acts)+len(tc.waits) {
				t.Errorf("with healing off: actions %v, waits %v", acts, waits)
			}
		})
	}
}
