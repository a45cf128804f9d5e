package usercfg

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// Marshal writes the canonical user.cfg of a configuration, in the
// order PVE's write_user_config uses: users (each followed by its tokens),
// groups, pools, custom roles and ACL entries, the sections separated by a
// blank line and everything sorted. ACL entries are walked depth-first with
// sorted children; at each path the subjects sharing a role list share a
// line, propagate=0 lines first. Parsing the result gives the same Config,
// and writing a parsed canonical file reproduces it byte for byte.
func Marshal(c *pveacl.Config) []byte {
	var b bytes.Buffer
	for _, id := range slices.Sorted(maps.Keys(c.Users)) {
		u := c.Users[id]
		fmt.Fprintf(&b, "user:%s:%d:%d:%s:%s:%s:%s:%s:\n", id, b2i(u.Enable), u.Expire,
			encodeTruthy(u.Firstname), encodeTruthy(u.Lastname), truthyText(u.Email),
			encodeTruthy(u.Comment), truthyText(u.Keys))
		for _, name := range slices.Sorted(maps.Keys(u.Tokens)) {
			t := u.Tokens[name]
			fmt.Fprintf(&b, "token:%s:%d:%d:%s:\n", pveacl.TokenID(id, name), t.Expire, b2i(t.Privsep), encodeTruthy(t.Comment))
		}
	}
	b.WriteString("\n")
	for _, id := range slices.Sorted(maps.Keys(c.Groups)) {
		g := c.Groups[id]
		members := append([]string(nil), g.Members...)
		sort.Strings(members)
		fmt.Fprintf(&b, "group:%s:%s:%s:\n", id, strings.Join(members, ","), encodeTruthy(g.Comment))
	}
	b.WriteString("\n")
	for _, id := range slices.Sorted(maps.Keys(c.Pools)) {
		p := c.Pools[id]
		vms := make([]string, len(p.VMs))
		for i, v := range p.VMs {
			vms[i] = strconv.Itoa(v)
		}
		sort.Strings(vms)
		stores := append([]string(nil), p.Storages...)
		sort.Strings(stores)
		fmt.Fprintf(&b, "pool:%s:%s:%s:%s:\n", id, encodeTruthy(p.Comment), strings.Join(vms, ","), strings.Join(stores, ","))
	}
	b.WriteString("\n")
	for _, id := range slices.Sorted(maps.Keys(c.Roles)) {
		if pveacl.IsBuiltinRole(id) {
			continue
		}
		privs := append([]string(nil), c.Roles[id].Privs...)
		sort.Strings(privs)
		fmt.Fprintf(&b, "role:%s:%s:\n", id, strings.Join(privs, ","))
	}
	b.WriteString("\n")
	writeACL(&b, c)
	return b.Bytes()
}

func encodeTruthy(s string) string {
	if !perlTrue(s) {
		return ""
	}
	return encodeText(s)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeACL emits the ACL lines path by path in tree order.
func writeACL(b *bytes.Buffer, c *pveacl.Config) {
	// path -> subject (as written) -> [propagate 0 roles, propagate 1 roles]
	byPath := map[string]map[string]*[2][]string{}
	for k, prop := range c.ACL {
		if k.Kind == pveacl.KindUser && k.Subject == "root@pam" {
			continue
		}
		name := k.Subject
		if k.Kind == pveacl.KindGroup {
			name = "@" + name
		}
		subjects := byPath[k.Path]
		if subjects == nil {
			subjects = map[string]*[2][]string{}
			byPath[k.Path] = subjects
		}
		roles := subjects[name]
		if roles == nil {
			roles = &[2][]string{}
			subjects[name] = roles
		}
		roles[b2i(prop)] = append(roles[b2i(prop)], k.Role)
	}
	paths := slices.Sorted(maps.Keys(byPath))
	slices.SortStableFunc(paths, pveacl.ComparePaths)
	for _, path := range paths {
		for prop := 0; prop <= 1; prop++ {
			lines := map[string][]string{} // role list -> subjects
			for name, roles := range byPath[path] {
				if len(roles[prop]) == 0 {
					continue
				}
				list := append([]string(nil), roles[prop]...)
				sort.Strings(list)
				key := strings.Join(list, ",")
				lines[key] = append(lines[key], name)
			}
			for _, rl := range slices.Sorted(maps.Keys(lines)) {
				subjects := lines[rl]
				sort.Strings(subjects)
				fmt.Fprintf(b, "acl:%d:%s:%s:%s:\n", prop, path, strings.Join(subjects, ","), rl)
			}
		}
	}
}
