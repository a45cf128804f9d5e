package lab_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/heal"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// The measurements of the TestHeal* tests: PXSUBSTRATE_HEAL_RUNS runs of
// each fault (1 by default), and PXSUBSTRATE_HEAL_BASELINE runs of the
// same without healing (none by default). docs/performance.md records
// them.
const (
	envHealRuns     = "PXSUBSTRATE_HEAL_RUNS"
	envHealBaseline = "PXSUBSTRATE_HEAL_BASELINE"
)

// healStartupTimeout is the pools' nodeStartupTimeout in every TestHeal*
// run, with maxUnhealthy 100%: short enough that the MachineHealthCheck
// replaces a worker capmox left stopped within a baseline run, and longer
// than the lab's grace period (lab.PoolHealingGrace), so that with
// healing the controller acts first.
const healStartupTimeout = "2m"

// healFault injects one fault into a lab running the tenant's pool and
// returns when the fault is cleared, and the Machines then.
type healFault func(t *testing.T, l *lab.Lab) (cleared time.Time)

// TestHealLostClone: capmox v0.9.0 loses its clones while its write of the
// ProxmoxCluster's node locations is refused (the admission policy of
// TestCapmoxLostClone), and leaves the VMs it finally records stopped.
// Once the write goes through, the controller destroys every clone capmox
// lost and starts the recorded VMs, with the tenant's own capmox token (no
// request denied): the pool is its two workers and nothing else, on the
// Machines capmox first made, without a human. Without healing the lost
// clones stay.
func TestHealLostClone(t *testing.T) {
	t.Parallel()
	measureHeal(t, "LostClone", lab.Options{}, func(t *testing.T, l *lab.Lab) time.Time {
		ctx := context.Background()
		policy, binding := refuseNodeLocations()
		must(t, l.Client.Create(ctx, policy))
		must(t, l.Client.Create(ctx, binding))
		applyHealingTenant(t, l, nil)
		eventually(t, 4*time.Minute, "capmox clones each worker again", func() (bool, string) {
			again := 0
			for _, n := range vmsByName(l) {
				if n > 1 {
					again++
				}
			}
			return again == 2, fmt.Sprintf("VMs per name %v", vmsByName(l))
		})
		must(t, l.Client.Delete(ctx, binding))
		must(t, l.Client.Delete(ctx, policy))
		return time.Now()
	}, func(t *testing.T, ev map[string]int) {
		if ev[string(heal.ReasonDestroyedLostClone)] < 2 || ev[string(heal.ReasonStartedStopped)] != 2 {
			t.Errorf("events %v: want a lost clone of each worker destroyed and both workers started", ev)
		}
	})
}

// TestHealFailedStart: each first start of a worker VM fails (the fake
// answers 500), capmox v0.9.0 reports the ProxmoxMachines provisioned with
// the VMs stopped and never starts them again; once starts work, the
// controller starts them. Without healing the MachineHealthCheck replaces
// the workers after nodeStartupTimeout.
func TestHealFailedStart(t *testing.T) {
	t.Parallel()
	measureHeal(t, "FailedStart", lab.Options{}, func(t *testing.T, l *lab.Lab) time.Time {
		must(t, l.PVE.InjectError(pvefake.Fault{Method: "POST", Path: `/qemu/[0-9]+/status/start$`, Status: 500, Message: "lab: start refused"}))
		applyHealingTenant(t, l, nil)
		eventually(t, 4*time.Minute, "both Machines Provisioned on stopped VMs", func() (bool, string) {
			_, state := machines(t, l.Client, "tenant-demo")
			vms := recordedVMs(t, l)
			if strings.Count(state, "phase=Provisioned") != 2 || len(vms) != 2 {
				return false, state
			}
			for _, vmid := range vms {
				if running, _, _ := l.PVE.VMRunning(vmid); running {
					return false, fmt.Sprintf("VM %d runs\n%s", vmid, state)
				}
			}
			return true, ""
		})
		l.PVE.ClearFaults()
		return time.Now()
	}, func(t *testing.T, ev map[string]int) {
		if ev[string(heal.ReasonStartedStopped)] != 2 {
			t.Errorf("events %v: want both workers started", ev)
		}
	})
}

// TestHealNodeOffline: a worker's Proxmox node goes offline; the
// MachineHealthCheck (readyUnknownTimeout 20s) deletes its Machine and
// capmox's delete fails ("cannot find node with name <node>",
// DeletionFailed) while Cluster API makes no replacement. Once the node is
// back the controller asks capmox to try again at once (the
// ProxmoxMachine's annotation), instead of capmox's backoff of up to
// 1000 s: the old VM goes and the replacement comes up.
func TestHealNodeOffline(t *testing.T) {
	t.Parallel()
	o := lab.Options{NodeMonitorGracePeriod: 10 * time.Second}
	measureHeal(t, "NodeOffline", o, func(t *testing.T, l *lab.Lab) time.Time {
		addSharedTemplate(t, l, false)
		applyHealingTenant(t, l, func(tn *lab.Tenant) {
			tn.Pools[0].Spec.ReadyUnknownTimeout = "20s"
			tn.Pools[0].Spec.Proxmox.AllowedNodes = pvelab.Nodes
			useSharedTemplate(tn)
		})
		eventually(t, 4*time.Minute, "two workers", func() (bool, string) { return poolIs(t, l, 2, 30) })
		victim, node := loneWorker(t, l)
		must(t, l.PVE.SetNodeOnline(node, false))
		nodeGoesUnknown(t, l, victim)
		eventually(t, 2*time.Minute, "capmox cannot destroy the VM of the deleting Machine", func() (bool, string) {
			msgs := machineMessages(t, l)
			return strings.Contains(msgs, victim.machine+" VirtualMachineProvisioned/DeletionFailed"), msgs
		})
		// Long enough for capmox's backoff to grow as in an outage.
		time.Sleep(time.Minute)
		must(t, l.PVE.SetNodeOnline(node, true))
		return time.Now()
	}, func(t *testing.T, ev map[string]int) {
		if ev[string(heal.ReasonRetriedDelete)] < 1 {
			t.Errorf("events %v: want the delete retried", ev)
		}
	})
}

// measureHeal runs fault in a lab whose controller heals the pool, and
// measures the time from the fault clearing to a pool of exactly its two
// workers running and no other VM, disk, ISO or address; with
// PXSUBSTRATE_HEAL_BASELINE it measures the same without healing (a
// run that does not heal within baselineLimit counts as not healed).
// Each healed run must show its actions as Events (checkEvents), deny no
// request of the tenant's token but a read of a VM destroyed (deniedBut:
// the CCM or capmox may read a VM healing destroyed once more before
// they learn it is gone), and start no VM stopped on purpose.
func measureHeal(t *testing.T, name string, o lab.Options, fault healFault, checkEvents func(*testing.T, map[string]int)) {
	runs := map[bool]int{true: healRuns(t, envHealRuns, 1), false: healRuns(t, envHealBaseline, 0)}
	for _, healing := range []bool{true, false} {
		if runs[healing] == 0 {
			continue
		}
		var took []time.Duration
		for i := range runs[healing] {
			t.Run(fmt.Sprintf("healing=%v/%d", healing, i), func(t *testing.T) {
				o := o
				o.Controller, o.PoolHealing = controller(t), healing
				l := startLabWith(t, o)
				cleared := fault(t, l)
				limit := 5 * time.Minute
				if !healing {
					limit = baselineLimit
				}
				d, ok := untilClean(t, l, cleared, limit)
				switch {
				case ok:
					took = append(took, d)
					t.Logf("heal %s healing=%v run %d: clean %s after the fault cleared", name, healing, i, d.Round(time.Second))
				case healing:
					t.Fatalf("the pool is not clean %s after the fault cleared", limit)
				default:
					took = append(took, -1)
					t.Logf("heal %s healing=%v run %d: not clean within %s", name, healing, i, limit)
				}
				if !healing {
					return
				}
				ev := healEvents(t, l)
				t.Logf("pool healing's Events: %v", ev)
				checkEvents(t, ev)
				if d := deniedBut(l, destroyedIDs(l)); len(d) != 0 {
					t.Errorf("the tenant's tokens were denied %v", d)
				}
			})
		}
		t.Logf("heal %s healing=%v over %d runs: %s", name, healing, runs[healing], summary(took))
	}
}

// healRuns is the number of runs the variable env asks for, def when it
// is unset.
func healRuns(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || env == envHealRuns && n < 1 {
		t.Fatalf("%s=%q: want a number of runs (at least 1 for %s)", env, v, envHealRuns)
	}
	return n
}

// baselineLimit bounds a run without healing: capmox's backoff reaches
// 1000 s, and a lost clone is never removed.
const baselineLimit = 10 * time.Minute

// untilClean waits until the pool is clean and returns how long after
// cleared it was first seen so.
func untilClean(t *testing.T, l *lab.Lab, cleared time.Time, limit time.Duration) (time.Duration, bool) {
	t.Helper()
	var state string
	for time.Since(cleared) < limit {
		var ok bool
		if ok, state = poolClean(t, l, 2, vmShape{diskGiB: 30}); ok {
			return time.Since(cleared), true
		}
		time.Sleep(time.Second)
	}
	t.Logf("the pool after %s:\n%s", limit, state)
	return 0, false
}

// summary is the median and maximum of the runs that healed, and how
// many never did (-1).
func summary(took []time.Duration) string {
	var healed []time.Duration
	for _, d := range took {
		if d >= 0 {
			healed = append(healed, d)
		}
	}
	never := len(took) - len(healed)
	if len(healed) == 0 {
		return fmt.Sprintf("never clean in %d runs", never)
	}
	slices.Sort(healed)
	median := healed[len(healed)/2]
	if len(healed)%2 == 0 {
		median = (healed[len(healed)/2-1] + median) / 2
	}
	out := fmt.Sprintf("median %s, max %s", median.Round(time.Second), healed[len(healed)-1].Round(time.Second))
	if never > 0 {
		out += fmt.Sprintf("; %d of %d runs never clean", never, len(took))
	}
	return out
}

// applyHealingTenant applies the lab's tenant with proxmox.heal on its
// pool, nodeStartupTimeout healStartupTimeout and maxUnhealthy 100%, after
// edit.
func applyHealingTenant(t *testing.T, l *lab.Lab, edit func(*lab.Tenant)) {
	t.Helper()
	tn := readTenant(t)
	all := capmoxrender.Quantity("100%")
	p := &tn.Pools[0].Spec
	p.Proxmox.Heal, p.NodeStartupTimeout, p.MaxUnhealthy = true, healStartupTimeout, &all
	if edit != nil {
		edit(&tn)
	}
	if _, err := l.Apply(context.Background(), tn); err != nil {
		t.Fatal(err)
	}
}

// healEvents counts the tenant's Events by reason.
func healEvents(t *testing.T, l *lab.Lab) map[string]int {
	t.Helper()
	list := &eventsv1.EventList{}
	must(t, l.Client.List(context.Background(), list, client.InNamespace("tenant-demo")))
	out := map[string]int{}
	for _, e := range list.Items {
		if strings.HasPrefix(e.Reason, "Heal") {
			n := 1
			if e.Series != nil {
				n = int(e.Series.Count)
			}
			out[e.Reason] += n
		}
	}
	return out
}

// destroyedIDs are the VM ids of the fake's qmdestroy tasks.
func destroyedIDs(l *lab.Lab) []int {
	var ids []int
	for _, task := range l.PVE.Tasks() {
		if id, err := strconv.Atoi(task.ID); task.Type == "qmdestroy" && err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
