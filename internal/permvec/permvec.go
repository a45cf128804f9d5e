// Package permvec reads the permission test vectors in testdata: user.cfg
// contents and, for a user or token and a path, the roles, the privileges
// or one privilege PVE gives it. They are an oracle independent of the
// project's evaluator: pveacl's tests and the Proxmox VE API fake's tests
// both run over them.
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

// Run runs f as a subtest of t for every case, with the case's user.cfg
// read for PVE 9; a case whose user.cfg draws warnings fails.
func Run(t *testing.T, f func(t *testing.T, c Case, cfg *pveacl.Config)) {
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
			f(t, c, cfg)
		})
	}
}
