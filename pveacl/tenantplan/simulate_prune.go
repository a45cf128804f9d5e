package tenantplan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// applyPrune simulates the operations only a prune plans, the way PVE
// carries them out: deleting a token or a user drops its ACL entries (and a
// user's tokens and group memberships), removing members detaches them, and
// a pool is deleted only when empty, together with the ACL entries on it.
func applyPrune(c *pveacl.Config, ch Change, vmPool map[int][]string, refuse refuser) error {
	switch ch.Op {
	case OpDeleteToken:
		u, ok := c.Users[ch.User]
		if !ok {
			return nil
		}
		delete(u.Tokens, ch.Token)
		c.Users[ch.User] = u
		dropACL(c, func(k pveacl.ACLKey) bool {
			return k.Kind == pveacl.KindToken && k.Subject == pveacl.TokenID(ch.User, ch.Token)
		})
	case OpDeleteUser:
		if ch.User == "root@pam" {
			return refuse("cannot delete user 'root@pam'")
		}
		delete(c.Users, ch.User)
		dropACL(c, func(k pveacl.ACLKey) bool {
			return (k.Kind == pveacl.KindUser && k.Subject == ch.User) || (k.Kind == pveacl.KindToken && strings.HasPrefix(k.Subject, ch.User+"!"))
		})
		for id, g := range c.Groups {
			g.Members = slices.DeleteFunc(slices.Clone(g.Members), func(m string) bool { return m == ch.User })
			c.Groups[id] = g
		}
	case OpRemovePoolMembers:
		p, ok := c.Pools[ch.Pool]
		if !ok {
			return refuse("pool '%s' does not exist", ch.Pool)
		}
		p.VMs = slices.DeleteFunc(slices.Clone(p.VMs), func(id int) bool { return slices.Contains(ch.VMs, id) })
		p.Storages = slices.DeleteFunc(slices.Clone(p.Storages), func(s string) bool { return slices.Contains(ch.Storages, s) })
		c.Pools[ch.Pool] = p
		for _, id := range ch.VMs {
			vmPool[id] = slices.DeleteFunc(vmPool[id], func(pool string) bool { return pool == ch.Pool })
		}
	case OpDeletePool:
		p, ok := c.Pools[ch.Pool]
		if !ok {
			return nil
		}
		if len(p.VMs) > 0 {
			return refuse("pool '%s' is not empty (contains VM %d)", ch.Pool, p.VMs[0])
		}
		if len(p.Storages) > 0 {
			return refuse("pool '%s' is not empty (contains storage '%s')", ch.Pool, p.Storages[0])
		}
		delete(c.Pools, ch.Pool)
		dropACL(c, func(k pveacl.ACLKey) bool { return k.Path == "/pool/"+ch.Pool })
	default:
		return refuse("unknown operation %q", ch.Op)
	}
	return nil
}

func dropACL(c *pveacl.Config, match func(pveacl.ACLKey) bool) {
	for k := range c.ACL {
		if match(k) {
			delete(c.ACL, k)
		}
	}
}

// pruneArgs returns the pveum arguments of a prune operation, or nil.
func pruneArgs(c Change) []string {
	switch c.Op {
	case OpDeleteToken:
		return []string{"user", "token", "remove", c.User, c.Token}
	case OpDeleteUser:
		return []string{"user", "delete", c.User}
	case OpRemovePoolMembers:
		args := []string{"pool", "modify", c.Pool}
		if len(c.VMs) > 0 {
			ids := make([]string, len(c.VMs))
			for i, vm := range c.VMs {
				ids[i] = strconv.Itoa(vm)
			}
			args = append(args, "--vms", strings.Join(ids, ","))
		}
		if len(c.Storages) > 0 {
			args = append(args, "--storage", strings.Join(c.Storages, ","))
		}
		return append(args, "--delete", "1")
	case OpDeletePool:
		return []string{"pool", "delete", c.Pool}
	}
	return nil
}
