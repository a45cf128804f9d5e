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

// tenantOf returns the tenant an owned comment names ("pxsubstrate tenant
// alpha", "pxsubstrate tenant alpha: CSI controller"), or "".
func tenantOf(comment string) string {
	rest, ok := strings.CutPrefix(comment, ownerMark+"tenant ")
	if !ok || rest == "pools" {
		return ""
	}
	name, _, _ := strings.Cut(rest, ": ")
	return name
}

// Prune returns the changes that remove the owned users, tokens and pools
// of the named tenants, which the specification must no longer list:
// tokens first, then users (deleting a user removes its tokens and ACL
// entries), then pools, children before parents. A prune removes nothing
// that no name covers: owned objects of other tenants, and the platform's,
// are kept and reported, so an empty or truncated specification cannot
// wipe every tenant. An intermediate pool a plan created goes when a pruned
// pool was under it and it is empty. A pool that still holds guests is
// kept (and reported), since removing it would orphan the guests; its
// storages are detached before an empty pool is deleted. Objects without
// the ownership mark are never touched. Naming no tenant, a tenant the
// specification lists, or one with nothing to prune is an error.
func Prune(desired *Tenants, observed *pveacl.Config, tenants []string) ([]Change, []Kept, error) {
	spec, v, err := prepare(desired, observed, []Option{WithVersion(observed.Version)})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot plan the prune: %w", err)
	}
	named, err := pruneNames(spec, tenants)
	if err != nil {
		return nil, nil, err
	}
	d := buildDesired(spec, v)
	p := &pruner{named: named, found: map[string]bool{}}
	p.users(d, observed)
	p.pools(d, observed)
	for _, n := range tenants {
		if !p.found[n] {
			return nil, nil, fmt.Errorf("cannot plan the prune: %w: the cluster holds no user, token or pool of tenant %q (their comment would read %q); check the name",
				ErrInvalidSpec, n, ownerMark+"tenant "+n)
		}
	}
	return append(p.tokens, append(p.userDels, p.poolDels...)...), p.kept, nil
}

// pruneNames checks the tenants named for pruning.
func pruneNames(spec *Tenants, tenants []string) (map[string]bool, error) {
	if len(tenants) == 0 {
		return nil, fmt.Errorf("cannot plan the prune: %w: name the tenants whose objects go", ErrInvalidSpec)
	}
	named := map[string]bool{}
	for _, n := range tenants {
		for _, t := range spec.Tenants {
			if t.Name == n {
				return nil, fmt.Errorf("cannot plan the prune: %w: tenant %q is still in the specification; remove it from the specification to prune it", ErrInvalidSpec, n)
			}
		}
		named[n] = true
	}
	return named, nil
}

type pruner struct {
	named                      map[string]bool
	found                      map[string]bool
	tokens, userDels, poolDels []Change
	kept                       []Kept
}

// covers reports whether an owned object's comment names a tenant to
// prune, and records it as found; otherwise the object is kept.
func (p *pruner) covers(object, comment string) bool {
	t := tenantOf(comment)
	if p.named[t] {
		p.found[t] = true
		return true
	}
	reason := "it belongs to the platform; remove it by hand if it is no longer needed"
	if t != "" {
		reason = fmt.Sprintf("tenant %s is not named for pruning", t)
	}
	p.kept = append(p.kept, Kept{Object: object, Reason: reason})
	return false
}

func (p *pruner) users(d desiredState, observed *pveacl.Config) {
	for _, uid := range slices.Sorted(maps.Keys(observed.Users)) {
		u := observed.Users[uid]
		_, wanted := d.users[uid]
		if !wanted && owned(u.Comment) {
			if p.covers("user "+uid, u.Comment) {
				p.userDels = append(p.userDels, Change{Op: OpDeleteUser, User: uid, Reason: "the tenant specification no longer lists this user"})
			}
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(u.Tokens)) {
			id, c := pveacl.TokenID(uid, name), u.Tokens[name].Comment
			if _, ok := d.tokens[id]; !ok && owned(c) && p.covers("token "+id, c) {
				p.tokens = append(p.tokens, Change{Op: OpDeleteToken, User: uid, Token: name,
					Reason: "the tenant specification no longer lists this token"})
			}
		}
	}
}

func (p *pruner) pools(d desiredState, observed *pveacl.Config) {
	names := slices.Sorted(maps.Keys(observed.Pools))
	sort.SliceStable(names, func(i, j int) bool { return strings.Count(names[i], "/") > strings.Count(names[j], "/") })
	gone := map[string]bool{}
	for _, name := range names {
		pool := observed.Pools[name]
		if _, wanted := d.pools[name]; wanted || !owned(pool.Comment) {
			continue
		}
		// An intermediate pool a plan created goes with the pruned pools under it.
		intermediate := tenantOf(pool.Comment) == "" && prunedChild(name, gone)
		if !intermediate && !p.covers("pool "+name, pool.Comment) {
			continue
		}
		if len(pool.VMs) > 0 {
			p.kept = append(p.kept, Kept{Object: "pool " + name,
				Reason: fmt.Sprintf("it still holds %d guest(s) (%s); move or delete them, then prune again", len(pool.VMs), joinInts(pool.VMs))})
			continue
		}
		if child := liveChild(observed, name, gone); child != "" {
			p.kept = append(p.kept, Kept{Object: "pool " + name, Reason: "its child pool " + child + " stays"})
			continue
		}
		if len(pool.Storages) > 0 {
			p.poolDels = append(p.poolDels, Change{Op: OpRemovePoolMembers, Pool: name, Storages: pool.Storages,
				Reason: "the pool is pruned; its storages stay, outside the pool"})
		}
		p.poolDels = append(p.poolDels, Change{Op: OpDeletePool, Pool: name, Reason: "the tenant specification no longer lists this pool"})
		gone[name] = true
	}
}

func prunedChild(pool string, gone map[string]bool) bool {
	for g := range gone {
		if strings.HasPrefix(g, pool+"/") {
			return true
		}
	}
	return false
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
