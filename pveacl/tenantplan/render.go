package tenantplan

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// RenderPveum writes the plan as a shell program of pveum commands with the
// full plural option names (--users, --groups, --tokens, --roles), one
// command per change, each preceded by its reason. Run it as root on a
// node of the cluster. Token secrets are printed by pveum when a token is
// created: store each in the management cluster, never in a tenant cluster.
func RenderPveum(w io.Writer, changes []Change, v pveacl.Version) error {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "# Proxmox VE %d access control for the tenants: %d step(s).\n", int(v), len(changes))
	b.WriteString("set -eu\n")
	if len(changes) == 0 {
		b.WriteString("# Nothing to do: the cluster already matches the tenants.\n")
	}
	for _, c := range changes {
		fmt.Fprintf(&b, "\n# %s: %s\n", c.Op.Describe(), oneLine(c.Reason))
		b.WriteString(PveumCommand(c))
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// PveumCommand returns the pveum command line of one change.
func PveumCommand(c Change) string {
	args := []string{"pveum"}
	add := func(a ...string) { args = append(args, a...) }
	switch c.Op {
	case OpCreateRole:
		add("role", "add", c.Role, "--privs", strings.Join(c.Privs, ","))
	case OpUpdateRole:
		add("role", "modify", c.Role, "--privs", strings.Join(c.Privs, ","))
	case OpCreatePool:
		add("pool", "add", c.Pool, "--comment", c.Comment)
	case OpCreateUser:
		add("user", "add", c.User, "--enable", "1", "--comment", c.Comment)
	case OpEnableUser:
		add("user", "modify", c.User, "--enable", "1")
	case OpCreateToken:
		add("user", "token", "add", c.User, c.Token, "--privsep", "1", "--comment", c.Comment)
	case OpUpdateToken:
		add("user", "token", "modify", c.User, c.Token, "--privsep", "1")
	case OpAddPoolMembers:
		add("pool", "modify", c.Pool)
		if len(c.VMs) > 0 {
			ids := make([]string, len(c.VMs))
			for i, vm := range c.VMs {
				ids[i] = strconv.Itoa(vm)
			}
			add("--vms", strings.Join(ids, ","))
		}
		if len(c.Storages) > 0 {
			add("--storage", strings.Join(c.Storages, ","))
		}
		if c.AllowMove {
			add("--allow-move", "1")
		}
	case OpSetACL, OpDeleteACL:
		verb := "modify"
		if c.Op == OpDeleteACL {
			verb = "delete"
		}
		add("acl", verb, c.Path, "--"+string(c.Kind)+"s", c.Subject, "--roles", strings.Join(c.Roles, ","))
		if c.Op == OpSetACL {
			flag := "0"
			if c.Propagate {
				flag = "1"
			}
			add("--propagate", flag)
		}
	default:
		prune := pruneArgs(c)
		if prune == nil {
			return "# unknown operation " + shellQuote(string(c.Op))
		}
		add(prune...)
	}
	for i := 1; i < len(args); i++ {
		args[i] = shellQuote(args[i])
	}
	return strings.Join(args, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./_-]+$`)

// shellQuote quotes an argument for /bin/sh when it needs it ('!' always
// does, for interactive shells).
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
