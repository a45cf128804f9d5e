package liveacl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pvepath"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// ErrIncompleteView reports that the reading token cannot see the whole cluster, so
// an audit or a plan built from what it sees would be wrong.
var ErrIncompleteView = errors.New("the token cannot see the whole access-control state")

// viewError lists the privileges the reading token lacks on / (each must
// propagate). PVEAuditor on / with propagation grants them all.
type viewError struct {
	Missing []string
}

func (e *viewError) Error() string {
	return fmt.Sprintf("%v: it lacks %s on / with propagation; grant it PVEAuditor on / (propagate) or use an administrator token",
		ErrIncompleteView, strings.Join(e.Missing, ", "))
}

// Unwrap returns ErrIncompleteView.
func (e *viewError) Unwrap() error { return ErrIncompleteView }

// viewPrivileges are needed on / (propagated) to list every user, ACL
// entry, pool, guest and storage.
var viewPrivileges = []string{"Datastore.Audit", "Pool.Audit", "Sys.Audit", "VM.Audit"}

// Read reads the access-control state of a cluster through its API
// and returns the Config that usercfg.Parse would give for its user.cfg,
// with Resources filled from GET /cluster/resources. It first checks that
// the token sees everything (ErrIncompleteView otherwise).
func Read(ctx context.Context, c Client) (*pveacl.Config, error) {
	snap, err := readSnapshot(ctx, c)
	if err != nil {
		return nil, err
	}
	cfg, err := buildConfig(snap)
	if err != nil {
		return nil, fmt.Errorf("cannot read the live access-control state: %w", err)
	}
	return cfg, nil
}

// readSnapshot reads the API answers Read builds its Config from:
// GET /version, /access/permissions?path=/, /access/users?full=1,
// /access/groups, /access/roles, /access/acl, /pools and one
// /pools?poolid=X per pool, and /cluster/resources.
func readSnapshot(ctx context.Context, c Client) (snapshot, error) {
	var s snapshot
	v, err := readVersion(ctx, c)
	if err != nil {
		return s, err
	}
	s.Version = v
	if err := checkView(ctx, c); err != nil {
		return s, err
	}
	reads := []struct {
		what, path string
		into       any
	}{
		{"users", "/access/users?full=1", &s.Users},
		{"groups", "/access/groups", &s.Groups},
		{"roles", "/access/roles", &s.Roles},
		{"ACL entries", "/access/acl", &s.ACL},
	}
	for _, r := range reads {
		if err := c.Get(ctx, r.path, r.into); err != nil {
			return s, fmt.Errorf("cannot read the %s (GET %s): %w", r.what, r.path, err)
		}
	}
	if s.Pools, err = readPools(ctx, c); err != nil {
		return s, err
	}
	if s.Resources, err = readResources(ctx, c); err != nil {
		return s, err
	}
	if s.Volumes, err = readVolumes(ctx, c, s.Resources); err != nil {
		return s, err
	}
	return s, nil
}

// readVersion returns the major version from GET /version.
func readVersion(ctx context.Context, c Client) (pveacl.Version, error) {
	var v proxmox.Version
	if err := c.Get(ctx, "/version", &v); err != nil {
		return 0, fmt.Errorf("cannot read the Proxmox VE version (GET /version): %w", err)
	}
	major, err := parseVersion(v.Version)
	if err != nil {
		return 0, fmt.Errorf("cannot read the Proxmox VE version: %w", err)
	}
	return major, nil
}

// parseVersion returns the major version of a PVE version string such as
// "9.1.1" or "8.4"; it must be a supported one.
func parseVersion(s string) (pveacl.Version, error) {
	head, _, _ := strings.Cut(strings.TrimSpace(s), ".")
	n, err := strconv.Atoi(head)
	if err != nil || head == "" {
		return 0, fmt.Errorf("%w: version %s does not start with a major number", pveacl.ErrInvalidVersion, termsafe.Quote(s))
	}
	v := pveacl.Version(n)
	if err := v.Validate(); err != nil {
		return 0, err
	}
	return v, nil
}

// checkView asks which privileges the token holds on /.
func checkView(ctx context.Context, c Client) error {
	var perms proxmox.Permissions
	if err := c.Get(ctx, "/access/permissions?path=%2F", &perms); err != nil {
		return fmt.Errorf("cannot read the token's own permissions (GET /access/permissions?path=/): %w", err)
	}
	root := perms["/"]
	var missing []string
	for _, p := range viewPrivileges {
		if prop, ok := root[p]; !ok || !bool(prop) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return &viewError{Missing: missing}
	}
	return nil
}

func readPools(ctx context.Context, c Client) ([]snapshotPool, error) {
	var list []snapshotPool
	if err := c.Get(ctx, "/pools", &list); err != nil {
		return nil, fmt.Errorf("cannot read the pools (GET /pools): %w", err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].PoolID < list[j].PoolID })
	out := make([]snapshotPool, 0, len(list))
	for _, p := range list {
		var detail proxmox.Pools
		path := "/pools?" + url.Values{"poolid": {p.PoolID}}.Encode()
		if err := c.Get(ctx, path, &detail); err != nil {
			return nil, fmt.Errorf("cannot read pool %s (GET %s): %w", termsafe.Cut(p.PoolID), termsafe.Cut(path), err)
		}
		sp := snapshotPool{PoolID: p.PoolID, Comment: p.Comment}
		for _, d := range detail {
			for _, m := range d.Members {
				sp.Members = append(sp.Members, snapshotPoolMember{Type: m.Type, VMID: int(m.VMID), Storage: m.Storage})
			}
		}
		out = append(out, sp)
	}
	return out, nil
}

func readResources(ctx context.Context, c Client) ([]snapshotResource, error) {
	rs, err := pveapi.ClusterResources(ctx, c, pveapi.AllResources)
	if err != nil {
		return nil, err
	}
	var out []snapshotResource
	for _, r := range rs {
		switch r.Type {
		case "qemu", "lxc", "storage":
			out = append(out, snapshotResource{Type: r.Type, VMID: r.VMID, Storage: r.Storage, Pool: r.Pool, Node: r.Node})
		}
	}
	return out, nil
}

// readVolumes lists the volumes of every storage on every node that has it
// (a shared storage once per volume id).
func readVolumes(ctx context.Context, c Client, rs []snapshotResource) ([]snapshotVolume, error) {
	seen := map[string]bool{}
	var out []snapshotVolume
	for _, r := range rs {
		if r.Type != "storage" || r.Node == "" {
			continue
		}
		var vols []struct {
			VolID string `json:"volid"`
			VMID  int    `json:"vmid"`
		}
		path := pvepath.Path("nodes", r.Node, "storage", r.Storage, "content")
		if err := c.Get(ctx, path, &vols); err != nil {
			return nil, fmt.Errorf("cannot list the volumes of storage %s (GET %s): %w", termsafe.Cut(r.Storage), termsafe.Cut(path), err)
		}
		for _, v := range vols {
			if !seen[v.VolID] {
				seen[v.VolID] = true
				out = append(out, snapshotVolume{Storage: r.Storage, VolID: v.VolID, VMID: v.VMID})
			}
		}
	}
	return out, nil
}

// ClusterRegion names the cluster for the region written next to token
// secrets: the cluster name from GET /cluster/status, or on a standalone
// node the node's name (Proxmox CCM uses one region per cluster).
func ClusterRegion(ctx context.Context, c Client) (string, error) {
	var status []struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Local int    `json:"local"`
	}
	if err := c.Get(ctx, "/cluster/status", &status); err != nil {
		return "", fmt.Errorf("cannot read the cluster name (GET /cluster/status) for the region: %w; pass the region explicitly", err)
	}
	node := ""
	for _, s := range status {
		switch {
		case s.Type == "cluster" && s.Name != "":
			return s.Name, nil
		case s.Type == "node" && (node == "" || s.Local == 1):
			node = s.Name
		}
	}
	if node == "" {
		return "", fmt.Errorf("cannot derive the region: GET /cluster/status lists no cluster and no node; pass the region explicitly")
	}
	return node, nil
}
