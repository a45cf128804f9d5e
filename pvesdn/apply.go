package pvesdn

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
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
// before): the apply then reloads every node once.
func Apply(ctx context.Context, c pveapi.Client, p *Plan) (*ApplyResult, error) {
	res := &ApplyResult{Nodes: []NodeResult{}}
	var ver struct {
		Release string `json:"release"`
	}
	if err := c.Get(ctx, "/version", &ver); err != nil {
		return nil, fmt.Errorf("cannot read the Proxmox VE version: %s", errText(err))
	}
	res.Release = ver.Release
	if p.Empty() {
		if err := readNodes(ctx, c, p.Zone, res); err != nil {
			return nil, err
		}
		if len(res.Reapplied) == 0 {
			return res, nil
		}
	}
	res.Locked = atLeast(ver.Release, 9, 2)
	if err := refusePending(ctx, c); err != nil {
		return nil, err
	}
	var token string
	if res.Locked {
		if err := c.Post(ctx, "/cluster/sdn/lock", map[string]any{}, &token); err != nil {
			return nil, fmt.Errorf("cannot take the SDN lock: %s", errText(err))
		}
	} else {
		res.Risk = fmt.Sprintf(riskWithoutLock, ver.Release)
	}
	upid, err := writeAndApply(ctx, c, p, token, res)
	if err != nil {
		if token != "" {
			if rerr := c.Post(ctx, "/cluster/sdn/rollback", map[string]any{"lock-token": token}, nil); rerr != nil {
				err = fmt.Errorf("%w (and the rollback failed: %s; roll back in Proxmox under Datacenter > SDN)", err, errText(rerr))
			}
		}
		return nil, err
	}
	res.Applies, res.UPID = 1, upid
	return res, readBack(ctx, c, upid, res)
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

// refusePending refuses an apply while zones or VNets have pending changes
// this plan did not make: PUT /cluster/sdn would apply them too.
func refusePending(ctx context.Context, c pveapi.Client) error {
	for _, kind := range []string{"zones", "vnets"} {
		var items []map[string]any
		if err := c.Get(ctx, "/cluster/sdn/"+kind+"?pending=1", &items); err != nil {
			return fmt.Errorf("cannot read the pending SDN %s: %s", kind, errText(err))
		}
		for _, it := range items {
			if st, _ := it["state"].(string); st != "" {
				id, _ := it[strings.TrimSuffix(kind, "s")].(string)
				return fmt.Errorf("SDN %s %s has a pending change (%s) that an apply would take along: apply or roll it back in Proxmox first", strings.TrimSuffix(kind, "s"), id, st)
			}
		}
	}
	return nil
}

// writeAndApply creates the zone and the VNets, dry-runs every node when
// locked, and applies once.
func writeAndApply(ctx context.Context, c pveapi.Client, p *Plan, token string, res *ApplyResult) (string, error) {
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
			return "", fmt.Errorf("cannot create SDN zone %s: %s", p.Zone, errText(err))
		}
	}
	for _, v := range p.Add {
		if err := c.Post(ctx, "/cluster/sdn/vnets", with(map[string]any{"vnet": v.ID, "zone": p.Zone, "tag": v.Tag}), nil); err != nil {
			return "", fmt.Errorf("cannot create VNet %s (tag %d): %s", v.ID, v.Tag, errText(err))
		}
	}
	if token != "" {
		if err := dryRun(ctx, c, res); err != nil {
			return "", err
		}
	}
	var upid string
	if err := c.Put(ctx, "/cluster/sdn", with(map[string]any{}), &upid); err != nil {
		return "", fmt.Errorf("cannot apply the SDN configuration: %s", errText(err))
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
			return fmt.Errorf("dry-run on node %s failed, nothing applied: %s", n, errText(err))
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
		return fmt.Errorf("the SDN apply task %s failed: %s", upid, errText(err))
	case !st.Succeeded():
		return fmt.Errorf("the SDN apply task %s failed: %s", upid, st.ExitStatus)
	}
	lines, err := tasks.Log(ctx, "", upid)
	if err != nil {
		return fmt.Errorf("cannot read the SDN apply log: %s", errText(err))
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
	if err := c.Get(ctx, "/nodes/"+url.PathEscape(node)+"/tasks?"+q.Encode(), &tasks); err != nil {
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
