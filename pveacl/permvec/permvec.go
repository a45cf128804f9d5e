// Package permvec is the kit of Proxmox VE permission vectors: user.cfg
// contents and, for a user or token and a path, the roles, the privileges
// or one privilege PVE gives it. They are an oracle independent of any
// evaluator: [Run] runs them over an [Evaluator], which pveacl's own
// evaluator and the Proxmox VE API fake (pvefake, its GET
// /access/permissions) both are, and so can an embedder's.
//
// A file holds cases. Lines starting with "#" are comments; blank lines
// separate nothing. A case is
//
//	case NAME
//	reason TEXT
//	config
//	  user:joe@pve:1:          (user.cfg lines, indented)
//	end
//	roles  AUTHID PATH ROLES   (the roles PVE::AccessControl::roles returns)
//	privs  AUTHID PATH PRIVS   (RPCEnvironment::permissions, exactly these)
//	allow  AUTHID PATH PRIV    (RPCEnvironment::check passes)
//	deny   AUTHID PATH PRIV    (RPCEnvironment::check fails)
//
// where ROLES and PRIVS are comma-separated lists, "-" for none, and PATH
// "-" is the empty path.
package permvec

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

//go:embed testdata/*.vec
var files embed.FS

// Kinds of check.
const (
	Roles = "roles"
	Privs = "privs"
	Allow = "allow"
	Deny  = "deny"
)

// Case is a user.cfg and what PVE answers on it.
type Case struct {
	File, Name, Reason string
	Config             string
	Checks             []Check
}

// Check is one expected answer.
type Check struct {
	Line   int
	Kind   string
	AuthID string
	Path   string
	// Want is the roles or privileges (sorted) for Roles and Privs, the one
	// privilege for Allow and Deny.
	Want []string
}

func (c Check) String() string {
	return fmt.Sprintf("line %d: %s %s %q %s", c.Line, c.Kind, c.AuthID, c.Path, strings.Join(c.Want, ","))
}

// Load reads every vector file.
func Load() ([]Case, error) {
	names, err := fs.Glob(files, "testdata/*.vec")
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, n := range names {
		data, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		cases, err := Parse(n, data)
		if err != nil {
			return nil, err
		}
		out = append(out, cases...)
	}
	return out, nil
}

// parser is the state of Parse.
type parser struct {
	file   string
	out    []Case
	cur    *Case
	config *strings.Builder
}

// Parse reads the cases of one file, named file in errors.
func Parse(file string, data []byte) ([]Case, error) {
	p := &parser{file: file}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		if err := p.line(n, sc.Text()); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if p.config != nil {
		return nil, fmt.Errorf("%s: config of case %q has no end", file, p.cur.Name)
	}
	return p.out, nil
}

func (p *parser) line(n int, text string) error {
	if p.config != nil {
		if strings.TrimSpace(text) == "end" {
			p.cur.Config, p.config = p.config.String(), nil
			return nil
		}
		p.config.WriteString(strings.TrimSpace(text) + "\n")
		return nil
	}
	trimmed := strings.TrimSpace(text)
	if trimmed == "" || strings.HasPrefix(trimmed, "#") {
		return nil
	}
	word, rest, _ := strings.Cut(trimmed, " ")
	rest = strings.TrimSpace(rest)
	if word == "case" {
		if rest == "" {
			return fmt.Errorf("case needs a name")
		}
		p.out = append(p.out, Case{File: p.file, Name: rest})
		p.cur = &p.out[len(p.out)-1]
		return nil
	}
	if p.cur == nil {
		return fmt.Errorf("%q before the first case", word)
	}
	switch word {
	case "reason":
		p.cur.Reason = rest
	case "config":
		p.config = &strings.Builder{}
	case Roles, Privs, Allow, Deny:
		c, err := check(n, word, rest)
		if err != nil {
			return err
		}
		p.cur.Checks = append(p.cur.Checks, c)
	default:
		return fmt.Errorf("unknown line %q: want case, reason, config, roles, privs, allow or deny", word)
	}
	return nil
}

func check(n int, kind, rest string) (Check, error) {
	f := strings.Fields(rest)
	if len(f) != 3 {
		return Check{}, fmt.Errorf("%s needs AUTHID PATH %s, got %q", kind, map[bool]string{true: "PRIV", false: "LIST"}[kind == Allow || kind == Deny], rest)
	}
	c := Check{Line: n, Kind: kind, AuthID: f[0], Path: f[1]}
	if c.Path == "-" {
		c.Path = ""
	}
	if f[2] != "-" {
		c.Want = strings.Split(f[2], ",")
		slices.Sort(c.Want)
	}
	if (kind == Allow || kind == Deny) && len(c.Want) != 1 {
		return Check{}, fmt.Errorf("%s names one privilege, got %q", kind, f[2])
	}
	return c, nil
}

// Evaluator is what the vectors hold to account: PVE's permission
// computation over one user.cfg.
type Evaluator interface {
	// Privileges is RPCEnvironment::permissions: the privileges authID
	// holds on path, in any order. An error fails the check.
	Privileges(authID, path string) ([]string, error)
}

// RoleEvaluator is an Evaluator that also answers PVE::AccessControl::roles:
// the names of the roles authID holds on path. The "roles" checks are asked
// of a RoleEvaluator only (PVE's API has no such query).
type RoleEvaluator interface {
	Evaluator
	Roles(authID, path string) ([]string, error)
}

// Run runs every case as a subtest of t: it reads the case's user.cfg for
// PVE 9 (a case whose user.cfg draws warnings fails), gives it to load, and
// asks every check of the Evaluator load returns, failing the subtest with
// the case's file, reason and line where the answer is not PVE's.
func Run(t *testing.T, load func(t *testing.T, cfg *pveacl.Config) Evaluator) {
	t.Helper()
	cases, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			cfg, rep := usercfg.Parse([]byte(c.Config), pveacl.PVE9)
			if rep.Total() != 0 {
				t.Fatalf("%s: the user.cfg of %s: %v", c.File, c.Name, rep.Warnings)
			}
			ev := load(t, cfg)
			for _, ch := range c.Checks {
				got, err := Answer(ev, ch)
				switch {
				case errors.Is(err, ErrNotAsked):
				case err != nil:
					t.Errorf("%s %s\n%s: %v", c.File, c.Reason, ch, err)
				case !slices.Equal(got, ch.Want):
					t.Errorf("%s %s\n%s: PVE answers %s, the evaluator %s", c.File, c.Reason, ch, list(ch.Want), list(got))
				}
			}
		})
	}
}

// ErrNotAsked is Answer's error for a "roles" check of an Evaluator that is
// not a RoleEvaluator.
var ErrNotAsked = errors.New("the evaluator answers no roles query")

// Answer asks c of ev and returns the answer in c's terms, to compare with
// c.Want: the sorted roles or privileges (nil for none), or for "allow"
// and "deny" the privilege when ev's answer agrees and "not PRIV" when it
// does not.
func Answer(ev Evaluator, c Check) ([]string, error) {
	var (
		got []string
		err error
	)
	switch c.Kind {
	case Roles:
		re, ok := ev.(RoleEvaluator)
		if !ok {
			return nil, ErrNotAsked
		}
		got, err = re.Roles(c.AuthID, c.Path)
	default:
		got, err = ev.Privileges(c.AuthID, c.Path)
	}
	if err != nil {
		return nil, err
	}
	if c.Kind == Allow || c.Kind == Deny {
		if slices.Contains(got, c.Want[0]) == (c.Kind == Allow) {
			return c.Want, nil
		}
		return []string{"not " + c.Want[0]}, nil
	}
	if len(got) == 0 {
		return nil, nil
	}
	got = slices.Clone(got)
	slices.Sort(got)
	return got, nil
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}
