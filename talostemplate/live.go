package talostemplate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// LiveResources lists the guests of a running cluster through its API
// (GET /cluster/resources?type=vm). PVE lists only the guests the token
// holds VM.Audit on, so a selection over them is the one capmox makes with
// that token: give it capmox's token to see what capmox sees.
type LiveResources struct {
	Client pveapi.Client
}

var _ ResourceLister = LiveResources{}

// ListVMResources reads the cluster's guests.
func (l LiveResources) ListVMResources(ctx context.Context) ([]VMResource, error) {
	rs, err := pveapi.ClusterResources(ctx, l.Client, pveapi.Guests)
	if err != nil {
		return nil, err
	}
	return vmResources(rs), nil
}

// nodeEntry is an item of GET /nodes.
type nodeEntry struct {
	Node   string `json:"node"`
	Status string `json:"status"`
}

// storageEntry is an item of GET /nodes/{node}/storage.
type storageEntry struct {
	Storage string `json:"storage"`
	Type    string `json:"type"`
	Content string `json:"content"`
}

func (s storageEntry) has(content string) bool {
	return slices.Contains(strings.Split(s.Content, ","), content)
}

// contentEntry is an item of GET /nodes/{node}/storage/{storage}/content.
type contentEntry struct {
	VolID string `json:"volid"`
}

// ParseUPIDNode returns the node a UPID ("UPID:node:pid:pstart:start:type:id:user:")
// names; ok is false when upid is not one (pveapi.UPIDNode).
func ParseUPIDNode(upid string) (node string, ok bool) { return pveapi.UPIDNode(upid) }

// waiter follows PVE tasks to their end.
type waiter struct {
	pveapi.Tasks
}

// wait polls the task until it stops and returns an error unless it
// succeeded: a *TaskError for a failed task. onLog, when set, receives the
// task's new log lines. running reports whether the task may still be
// running when wait returns an error.
func (w waiter) wait(ctx context.Context, node, upid string, onLog func(string)) (running bool, err error) {
	if n, ok := pveapi.UPIDNode(upid); ok {
		node = n
	}
	st, err := w.Wait(ctx, node, upid, onLog)
	switch {
	case err != nil:
		return true, err
	case !st.Succeeded():
		return false, &TaskError{UPID: upid, Node: node, Type: st.Type, ExitStatus: st.ExitStatus}
	}
	return false, nil
}

// readNodes lists the cluster's nodes.
func readNodes(ctx context.Context, c pveapi.Client) ([]string, error) {
	var ns []nodeEntry
	if err := c.Get(ctx, "/nodes", &ns); err != nil {
		return nil, fmt.Errorf("cannot list the nodes (GET /nodes): %w", err)
	}
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.Node)
	}
	slices.Sort(out)
	return out, nil
}

// readStorages lists the storages enabled on a node that the token sees.
func readStorages(ctx context.Context, c pveapi.Client, node string) ([]storageEntry, error) {
	var ss []storageEntry
	path := pveapi.Path("nodes", node, "storage") + "?enabled=1"
	if err := c.Get(ctx, path, &ss); err != nil {
		return nil, fmt.Errorf("cannot list the storages of node %s (GET %s): %w", termsafe.Cut(node), termsafe.Cut(path), err)
	}
	return ss, nil
}

// checkVMID asks nextid whether vmid is free anywhere in the cluster.
func checkVMID(ctx context.Context, c pveapi.Client, vmid int) error {
	var got json.RawMessage
	err := c.Get(ctx, "/cluster/nextid?vmid="+strconv.Itoa(vmid), &got)
	var apiErr *proxmox.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest && apiErr.Errors["vmid"] != "" {
		taken := &VMIDTakenError{VMID: vmid, Reason: strings.TrimSpace(apiErr.Errors["vmid"])}
		var free json.RawMessage
		if c.Get(ctx, "/cluster/nextid", &free) == nil {
			if n, err := strconv.Atoi(strings.Trim(string(free), `"`)); err == nil {
				taken.Free = n
			}
		}
		return taken
	}
	if err != nil {
		return fmt.Errorf("cannot check that VMID %d is free (GET /cluster/nextid?vmid=%d): %w", vmid, vmid, err)
	}
	return nil
}

// checkGuestView makes sure the token sees every guest: VM.Audit on /vms,
// propagated. Without it /cluster/resources hides guests, and a template
// with the same tag set could be among them.
func checkGuestView(ctx context.Context, c pveapi.Client) error {
	var perms map[string]map[string]int
	if err := c.Get(ctx, "/access/permissions?path=%2Fvms", &perms); err != nil {
		return fmt.Errorf("cannot read the token's own permissions (GET /access/permissions?path=/vms): %w", err)
	}
	if perms["/vms"]["VM.Audit"] != 1 {
		return fmt.Errorf("%w: it lacks VM.Audit on /vms with propagation, so a template with the same tags could hide from the check; "+
			"grant it PVEAuditor on /vms (propagate) or use an administrator token", ErrIncompleteView)
	}
	return nil
}

// hasVolume reports whether volid is on the storage.
func hasVolume(ctx context.Context, c pveapi.Client, node, storage, volid, content string) (bool, error) {
	var vols []contentEntry
	path := storagePath(node, storage) + "/content?content=" + url.QueryEscape(content)
	if err := c.Get(ctx, path, &vols); err != nil {
		return false, fmt.Errorf("cannot list the volumes of storage %s (GET %s): %w", termsafe.Cut(storage), termsafe.Cut(path), err)
	}
	return slices.ContainsFunc(vols, func(v contentEntry) bool { return v.VolID == volid }), nil
}

// vmState reports whether the VM exists on the node and is a template.
func vmState(ctx context.Context, c pveapi.Client, node string, vmid int) (exists, template bool, err error) {
	var st struct {
		Template Flag `json:"template"`
	}
	path := vmPath(node, vmid) + "/status/current"
	if err := c.Get(ctx, path, &st); err != nil {
		if proxmox.IsNotFound(err) {
			return false, false, nil
		}
		return false, false, fmt.Errorf("cannot read VM %d (GET %s): %w", vmid, termsafe.Cut(path), err)
	}
	return true, st.Template == 1, nil
}

// readConfig returns a VM's configuration with every value as text.
func readConfig(ctx context.Context, c pveapi.Client, node string, vmid int) (map[string]string, error) {
	var raw map[string]json.RawMessage
	path := vmPath(node, vmid) + "/config"
	if err := c.Get(ctx, path, &raw); err != nil {
		return nil, fmt.Errorf("cannot read the configuration of VM %d (GET %s): %w", vmid, termsafe.Cut(path), err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v) // a number, as PVE sends integer and boolean options
		}
		if k != "digest" {
			out[k] = s
		}
	}
	return out, nil
}

// permissionError turns PVE's 403 for call into a *PermissionError; other
// errors pass through.
func permissionError(call, needs string, err error) error {
	var apiErr *proxmox.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		return err
	}
	path, priv, _ := ParsePermissionCheck(apiErr.Message + " " + apiErr.Status)
	return &PermissionError{Call: call, Path: path, Privilege: priv, Needs: needs, Err: err}
}
