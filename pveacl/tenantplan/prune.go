package tenantplan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// Operations that only a prune plans. They remove objects that carry the
// ownership mark (a comment starting with ownerMark) and that the tenant
// specification no longer asks for.
const (
	OpDeleteToken       Op = "delete-token"
	OpDeleteUser        Op = "delete-user"
	OpRemovePoolMembers Op = "remove-pool-members"
	OpDeletePool        Op = "delete-pool"
)

// ownerMark starts the comment of every user, token and pool a plan
// creates; a prune touches nothing without it.
const ownerMark = "pxsubstrate "

// Owned reports whether a comment marks an object this package created.
func owned(comment string) bool { return strings.HasPrefix(comment, ownerMark) }

// Kept is an owned object a prune leaves in place, and why.
type Kept struct {
	Object string `json:"object"`
	Reason string `json:"reason"`
}

// Prune returns the changes that remove owned users, tokens and pools
// the specification no longer lists: tokens first, then users (deleting a
// user removes its tokens and ACL entries), then pools, children before
// parents. A pool that still holds guests is kept (and reported), since
// removing it would orphan the guests; its storages are detached before
// an empty pool is deleted. Objects without the ownership mark are never
// touched.
func Prune(desired *Tenants, observed *pveacl.Config) ([]Change, []Kept, error) {
	spec, v, err := prepare(desired, observed, []Option{WithVersion(observed.Version)})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot plan the prune: %w", err)
	}
	d := buildDesired(spec, v)
	var out []Change
	for _, uid := range slices.Sorted(maps.Keys(observed.Users)) {
		u := observed.Users[uid]
		_, wanted := d.users[uid]
		if !wanted && owned(u.Comment) {
			out = append(out, Change{Op: OpDeleteUser, User: uid, Reason: "the tenant specification no longer lists this user"})
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(u.Tokens)) {
			if _, ok := d.tokens[pveacl.TokenID(uid, name)]; !ok && owned(u.Tokens[name].Comment) {
				out = append(out, Change{Op: OpDeleteToken, User: uid, Token: name,
					Reason: "the tenant specification no longer lists this token"})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Op == OpDeleteToken && out[j].Op != OpDeleteToken })
	pools, kept := prunePools(d, observed)
	return append(out, pools...), kept, nil
}

func prunePools(d desiredState, observed *pveacl.Config) ([]Change, []Kept) {
	names := slices.Sorted(maps.Keys(observed.Pools))
	sort.SliceStable(names, func(i, j int) bool { return strings.Count(names[i], "/") > strings.Count(names[j], "/") })
	gone := map[string]bool{}
	var out []Change
	var kept []Kept
	for _, name := range names {
		p := observed.Pools[name]
		if _, wanted := d.pools[name]; wanted || !owned(p.Comment) {
			continue
		}
		if len(p.VMs) > 0 {
			kept = append(kept, Kept{Object: "pool " + name,
				Reason: fmt.Sprintf("it still holds %d guest(s) (%s); move or delete them, then prune again", len(p.VMs), joinInts(p.VMs))})
			continue
		}
		if child := liveChild(observed, name, gone); child != "" {
			kept = append(kept, Kept{Object: "pool " + name, Reason: "its child pool " + child + " stays"})
			continue
		}
		if len(p.Storages) > 0 {
			out = append(out, Change{Op: OpRemovePoolMembers, Pool: name, Storages: p.Storages,
				Reason: "the pool is pruned; its storages stay, outside the pool"})
		}
		out = append(out, Change{Op: OpDeletePool, Pool: name, Reason: "the tenant specification no longer lists this pool"})
		gone[name] = true
	}
	return out, kept
}

func liveChild(c *pveacl.Config, pool string, gone map[string]bool) string {
	for _, other := range slices.Sorted(maps.Keys(c.Pools)) {
		if strings.HasPrefix(other, pool+"/") && !gone[other] {
			return other
		}
	}
	return ""
}

func joinInts(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ",")
}
