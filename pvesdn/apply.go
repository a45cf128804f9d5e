package pvesdn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// NodeResult is one node's network reload after an apply.
type NodeResult struct {
	Node string `json:"node"`
	// Status is the reload task's exit status ("OK", or the error), or
	// "not started" when the apply could not reach the node.
	Status string `json:"status"`
	UPID   string `json:"upid,omitempty"`
	OK     bool   `json:"ok"`
}

// ApplyResult is what Apply did.
type ApplyResult struct {
	// Release is the server's major.minor release.
	Release string `json:"release"`
	// Locked is true when the changes went through the SDN lock and the
	// dry-run (PVE 9.2 and later).
	Locked bool `json:"locked"`
	// Risk names what an apply without the lock and dry-run risks.
	Risk string `json:"risk,omitempty"`
	// DryRun holds each node's interfaces diff (locked applies only).
	DryRun map[string]string `json:"dryRun,omitempty"`
	// Reapplied names the nodes where the SDN zone was pending or in error
	// when the plan was empty: the apply that reloads them.
	Reapplied []NodeZone `json:"reapplied,omitempty"`
	// Finished names the plan's own SDN zone and VNets that an earlier
	// apply wrote and did not apply (it stopped before PUT /cluster/sdn):
	// this apply applies them.
	Finished []string `json:"finished,omitempty"`
	// Unread names the nodes whose SDN state could not be read before an
	// empty plan: nothing tells whether they carry the zone.
	Unread []NodeZone `json:"unread,omitempty"`
	// Applies counts PUT /cluster/sdn: one per non-empty plan, or one
	// that reloads the nodes of Reapplied.
	Applies int          `json:"applies"`
	UPID    string       `json:"upid,omitempty"`
	Nodes   []NodeResult `json:"nodes"`
}

// OK reports whether every node reloaded.
func (r *ApplyResult) OK() bool {
	for _, n := range r.Nodes {
		if !n.OK {
			return false
		}
	}
	return true
}

// riskWithoutLock is what a plain apply risks.
const riskWithoutLock = "PVE %s has no SDN lock and dry-run (they come with 9.2): a change another writer makes between the check " +
	"for pending changes and the apply is applied with this plan, and no node's new interfaces are previewed"

// Apply writes a plan and applies it once: on PVE 9.2 and later under the
// SDN lock (refused while other changes are pending), with a dry-run on
// every node before the apply and a rollback if a write fails; before 9.2
// plainly, after refusing pending changes, with the risk named. It then
// waits for the apply and reads each node's reload back: Proxmox applies on
// every node and only logs a node that fails. An empty plan applies only
// when the SDN zone is pending or in error on a node (a reload that failed
// before), or when the plan's own zone or VNets are written but not
// applied (an earlier apply that stopped): the apply then reloads every
// node once. A pending creation of the plan's own zone or VNets is taken
// along; any other pending change is refused. When a write fails after
// others succeeded, the error is a *PartialWriteError naming what was
// written and how it was undone, or how to undo it.
func Apply(ctx context.Context, c pveapi.Client, p *Plan) (*ApplyResult, error) {
	res := &ApplyResult{Nodes: []NodeResult{}}
	var ver struct {
		Release string `json:"release"`
	}
	if err := c.Get(ctx, "/version", &ver); err != nil {
		return nil, errorf("cannot read the Proxmox VE version: %s", errText(err))
	}
	res.Release = ver.Release
	own, foreign, err := pendingChanges(ctx, c, p)
	if err != nil {
		return nil, err
	}
	res.Finished = own
	if p.Empty() && len(own) == 0 {
		if err := readNodes(ctx, c, p.Zone, res); err != nil {
			return nil, err
		}
		if len(res.Reapplied) == 0 {
			return res, nil
		}
	}
	if foreign != nil {
		return nil, foreign
	}
	res.Locked = atLeast(ver.Release, 9, 2)
	token, err := lock(ctx, c, res, len(own) > 0)
	if err != nil {
		return nil, err
	}
	var w written
	upid, err := writeAndApply(ctx, c, p, token, res, &w)
	if err != nil {
		return nil, w.failed(ctx, c, token, err)
	}
	res.Applies, res.UPID = 1, upid
	return res, readBack(ctx, c, upid, res)
}

// lock takes the SDN lock on PVE 9.2 and later (allowing pending changes
// when they are the plan's own) and returns its token; before 9.2 it names
// the risk of applying without one.
func lock(ctx context.Context, c pveapi.Client, res *ApplyResult, allowPending bool) (string, error) {
	if !res.Locked {
		res.Risk = sprintf(riskWithoutLock, termsafe.Cut(res.Release))
		return "", nil
	}
	req := map[string]any{}
	if allowPending {
		req["allow-pending"] = 1
	}
	var token string
	if err := c.Post(ctx, "/cluster/sdn/lock", req, &token); err != nil {
		return "", errorf("cannot take the SDN lock: %s", errText(err))
	}
	if strings.TrimSpace(token) == "" {
		return "", errors.New("the SDN lock answer holds no lock token, so nothing guards the changes: nothing was written; " +
			"check that the API is Proxmox VE 9.2 or later, and release a lock left behind with pvesh delete /cluster/sdn/lock --force 1")
	}
	return token, nil
}

// readNodes reads the SDN zone on every node into res.Reapplied (pending
// or in error) and res.Unread.
func readNodes(ctx context.Context, c pveapi.Client, zone string, res *ApplyResult) error {
	nodes, err := ZoneOnNodes(ctx, c, zone)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		switch {
		case n.Err != "":
			res.Unread = append(res.Unread, n)
		case n.NotAvailable():
			res.Reapplied = append(res.Reapplied, n)
		}
	}
	return nil
}

// pendingEntry is an item of GET /cluster/sdn/{zones,vnets}?pending=1.
type pendingEntry struct {
	Zone    string         `json:"zone"`
	VNet    string         `json:"vnet"`
	State   string         `json:"state"`
	Pending map[string]any `json:"pending"`
}

// pendingChanges reads the pending SDN changes and splits them: the
// plan's own unfinished creations (its zone on its bridge, its present
// VNets with their tags), which an apply finishes, and the first other
// one, which PUT /cluster/sdn would take along and so is refused.
func pendingChanges(ctx context.Context, c pveapi.Client, p *Plan) (own []string, foreign error, err error) {
	for _, kind := range []string{"zones", "vnets"} {
		var items []pendingEntry
		if err := c.Get(ctx, pveapi.Path("cluster", "sdn", kind)+"?pending=1", &items); err != nil {
			return nil, nil, errorf("cannot read the pending SDN %s: %s", kind, errText(err))
		}
		for _, it := range items {
			switch {
			case it.State == "":
			case p.ownPending(it):
				own = append(own, it.Zone+it.VNet)
			case foreign == nil:
				what, id := "zone", it.Zone
				if kind == "vnets" {
					what, id = "VNet", it.VNet
				}
				foreign = errorf("SDN %s %s has a pending change (%s) that an apply would take along: apply or roll it back in Proxmox first", what, id, it.State)
			}
		}
	}
	return own, foreign, nil
}

// ownPending: the entry is the creation of the plan's zone, or of one of
// its present VNets with the planned tag, written and not yet applied.
func (p *Plan) ownPending(it pendingEntry) bool {
	if it.State != "new" {
		return false
	}
	if it.VNet == "" {
		return it.Zone == p.Zone && fmt.Sprint(it.Pending["bridge"]) == p.Bridge
	}
	tag, ok := p.present[it.VNet]
	return ok && fmt.Sprint(it.Pending["zone"]) == p.Zone && fmt.Sprint(it.Pending["tag"]) == strconv.Itoa(tag)
}

// writeAndApply creates the zone and the VNets, dry-runs every node when
// locked, and applies once.
func writeAndApply(ctx context.Context, c pveapi.Client, p *Plan, token string, res *ApplyResult, w *written) (string, error) {
	with := func(m map[string]any) map[string]any {
		if token != "" {
			m["lock-token"] = token
		}
		return m
	}
	if p.CreateZone {
		zone := with(map[string]any{"zone": p.Zone, "type": "vlan", "bridge": p.Bridge})
		if p.MTU > 0 {
			zone["mtu"] = p.MTU
		}
		if err := c.Post(ctx, "/cluster/sdn/zones", zone, nil); err != nil {
			return "", errorf("cannot create SDN zone %s: %s", p.Zone, errText(err))
		}
		w.zone = p.Zone
	}
	for _, v := range p.Add {
		if err := c.Post(ctx, "/cluster/sdn/vnets", with(map[string]any{"vnet": v.ID, "zone": p.Zone, "tag": v.Tag}), nil); err != nil {
			return "", errorf("cannot create VNet %s (tag %d): %s", v.ID, v.Tag, errText(err))
		}
		w.vnets = append(w.vnets, v)
	}
	if token != "" {
		if err := dryRun(ctx, c, res); err != nil {
			return "", err
		}
	}
	var upid string
	if err := c.Put(ctx, "/cluster/sdn", with(map[string]any{}), &upid); err != nil {
		return "", errorf("cannot apply the SDN configuration: %s", errText(err))
	}
	return upid, nil
}

func dryRun(ctx context.Context, c pveapi.Client, res *ApplyResult) error {
	nodes, err := listNodes(ctx, c)
	if err != nil {
		return err
	}
	res.DryRun = map[string]string{}
	for _, n := range nodes {
		var d proxmox.SDNDryRun
		if err := c.Get(ctx, "/cluster/sdn/dry-run?"+url.Values{"node": {n}}.Encode(), &d); err != nil {
			return errorf("dry-run on node %s failed, nothing applied: %s", n, errText(err))
		}
		res.DryRun[n] = d.InterfacesDiff
	}
	return nil
}

type taskEntry struct {
	UPID      string `json:"upid"`
	Node      string `json:"node"`
	Status    string `json:"status"`
	StartTime int64  `json:"starttime"`
}

// taskTimeout bounds the wait for the apply task and each node's reload.
const taskTimeout = 10 * time.Minute

// readBack waits for the apply task, then reads each node's reload task
// (srvreload, started by root@pam at or after the apply) and the apply
// log's line for a node it could not reach.
func readBack(ctx context.Context, c pveapi.Client, upid string, res *ApplyResult) error {
	tasks := pveapi.Tasks{Client: c}
	wctx, cancel := context.WithTimeout(ctx, taskTimeout)
	defer cancel()
	st, err := tasks.Wait(wctx, "", upid, nil)
	switch {
	case err != nil:
		return errorf("the SDN apply task %s failed: %s", upid, errText(err))
	case !st.Succeeded():
		return errorf("the SDN apply task %s failed: %s", upid, st.ExitStatus)
	}
	lines, err := tasks.Log(ctx, "", upid)
	if err != nil {
		return errorf("cannot read the SDN apply log: %s", errText(err))
	}
	failed := map[string]string{}
	for i := range len(lines) {
		if node, ok := pvesh(lines[i]); ok {
			failed[node] = lines[i]
		}
	}
	nodes, err := listNodes(ctx, c)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		res.Nodes = append(res.Nodes, nodeReload(ctx, c, n, st.Started(), failed[n]))
	}
	return nil
}

// pvesh reads the apply log's line for a node whose reload could not be
// started.
func pvesh(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "command 'pvesh set /nodes/")
	if !ok {
		return "", false
	}
	node, _, ok := strings.Cut(rest, "/network")
	return node, ok
}

func nodeReload(ctx context.Context, c pveapi.Client, node string, since time.Time, failed string) NodeResult {
	if failed != "" {
		return NodeResult{Node: node, Status: "not started: " + failed}
	}
	q := url.Values{"typefilter": {"srvreload"}, "userfilter": {"root@pam"}, "source": {"all"},
		"since": {strconv.FormatInt(since.Unix(), 10)}}
	var tasks []taskEntry
	if err := c.Get(ctx, pveapi.Path("nodes", node, "tasks")+"?"+q.Encode(), &tasks); err != nil {
		return NodeResult{Node: node, Status: "unknown: " + errText(err)}
	}
	if len(tasks) == 0 {
		return NodeResult{Node: node, Status: "not started"}
	}
	wctx, cancel := context.WithTimeout(ctx, taskTimeout)
	defer cancel()
	st, err := pveapi.Tasks{Client: c}.Wait(wctx, node, tasks[0].UPID, nil)
	switch {
	case err != nil:
		return NodeResult{Node: node, UPID: tasks[0].UPID, Status: "unknown: " + errText(err)}
	case !st.Succeeded():
		return NodeResult{Node: node, UPID: tasks[0].UPID, Status: st.ExitStatus}
	}
	return NodeResult{Node: node, UPID: tasks[0].UPID, Status: st.ExitStatus, OK: true}
}

// atLeast compares a "major.minor" release.
func atLeast(release string, major, minor int) bool {
	a, b, _ := strings.Cut(release, ".")
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return x > major || (x == major && y >= minor)
}
