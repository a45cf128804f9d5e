package usercfg

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Warning is a line PVE's parser would warn about; the line is ignored in
// whole or in part, exactly as PVE ignores it.
type Warning struct {
	Line int    // 1-based
	Msg  string // PVE's text
}

func (w Warning) String() string { return fmt.Sprintf("line %d: %s", w.Line, w.Msg) }

// MaxWarnings is the most warnings a Report keeps: a file of thousands of
// bad lines yields these and a count of the rest, never a flood.
const MaxWarnings = 20

// Report is what Parse has to say about a file besides its Config.
type Report struct {
	// Warnings are the first MaxWarnings warnings, in line order. The
	// input text they quote has its control characters, newline and tab
	// escaped as \xNN (termsafe.EscapeLine), so a warning cannot drive a
	// terminal.
	Warnings []Warning
	// More counts the warnings beyond Warnings.
	More int
	// Lines counts the lines that are user.cfg lines (user:, token:,
	// group:, role:, acl: or pool:), read or ignored.
	Lines int
}

// Total is the number of warnings, kept or counted.
func (r Report) Total() int { return len(r.Warnings) + r.More }

// Err refuses a file that has text but no user.cfg line at all, naming
// it as name: such a file is something else, not a user.cfg whose every
// line PVE would ignore.
func (r Report) Err(name string, data []byte) error {
	if r.Lines > 0 || trimPerl(string(data)) == "" {
		return nil
	}
	return fmt.Errorf("%s: not a user.cfg: none of its lines starts with user:, token:, group:, role:, acl: or pool: (give the cluster's /etc/pve/user.cfg)", name)
}

var (
	digitsRe       = regexp.MustCompile(`^[0-9]+$`)
	groupSubjectRe = regexp.MustCompile(`^@([^\t\n\v\f\r ]+)$`)
)

// Parse reads /etc/pve/user.cfg as PVE's parse_user_config does,
// with the privilege table of version v. It never fails: like PVE it skips
// what it cannot use and reports it as warnings (bounded, see Report; a
// file with no user.cfg line at all is refused by Report.Err). The quirks
// kept:
//
//   - every line is trimmed and split on every ':', and each field is trimmed;
//   - free text (names, comments) is percent-decoded;
//   - an empty or missing privsep, enable or propagate field means 0;
//   - a token line counts only after its user's line, and a later line for
//     the same user drops the tokens read so far;
//   - an ACL entry for a token counts only after the token's line, and an
//     ACL role only after the role's line;
//   - a VM listed by a second pool stays in the first ("duplicate vmid");
//   - a nested pool a/b creates its parents.
//
// Two deliberate differences, both invisible to permissions: ACL entries for
// root@pam are dropped (PVE never writes them back), and a role line that
// names a built-in role is ignored instead of altering the built-in role.
func Parse(data []byte, v pveacl.Version) (*pveacl.Config, Report) {
	p := parser{cfg: pveacl.NewConfig(v), vmPool: map[int]string{}}
	for i, raw := range strings.Split(string(data), "\n") {
		line := trimPerl(raw)
		if line == "" {
			continue
		}
		p.line = i + 1
		p.parseLine(line)
	}
	return p.cfg, p.report
}

type parser struct {
	cfg    *pveacl.Config
	vmPool map[int]string
	line   int
	report Report
}

// warn records PVE's warning, its quoted input escaped onto one line, or
// only counts it once MaxWarnings are kept.
func (p *parser) warn(format string, args ...any) {
	if len(p.report.Warnings) >= MaxWarnings {
		p.report.More++
		return
	}
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = termsafe.EscapeLine(s)
		}
	}
	p.report.Warnings = append(p.report.Warnings, Warning{Line: p.line, Msg: "user config - " + fmt.Sprintf(format, args...)})
}

// lineKinds are the first fields of user.cfg lines.
var lineKinds = []string{"user", "token", "group", "role", "acl", "pool"}

func (p *parser) parseLine(line string) {
	f := lineFields(line)
	if slices.Contains(lineKinds, field(f, 0)) {
		p.report.Lines++
	}
	switch field(f, 0) {
	case "user":
		p.user(f)
	case "token":
		p.token(f)
	case "group":
		p.group(f)
	case "role":
		p.role(f)
	case "acl":
		p.acl(f)
	case "pool":
		p.pool(f)
	default:
		p.warn("ignore config line: %s", line)
	}
}

// parseExpire applies PVE's rule: empty or "0" is 0, otherwise digits only.
func parseExpire(s string) (int64, bool) {
	if !perlTrue(s) {
		return 0, true
	}
	if !digitsRe.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func decodeIf(raw string) string {
	if !perlTrue(raw) {
		return ""
	}
	return truthyText(decodeText(raw))
}

func (p *parser) user(f []string) {
	id := field(f, 1)
	if !pveacl.ValidUserID(id) {
		p.warn("ignore user '%s' - invalid user name", id)
		return
	}
	expire, ok := parseExpire(field(f, 3))
	if !ok {
		p.warn("ignore user '%s' - (illegal characters in expire '%s')", id, field(f, 3))
		return
	}
	p.cfg.Users[id] = pveacl.User{
		Enable:    perlTrue(field(f, 2)),
		Expire:    expire,
		Firstname: decodeIf(field(f, 4)),
		Lastname:  decodeIf(field(f, 5)),
		Email:     truthyText(field(f, 6)),
		Comment:   decodeIf(field(f, 7)),
		Keys:      truthyText(field(f, 8)),
		Tokens:    map[string]pveacl.Token{},
	}
}

func (p *parser) token(f []string) {
	id := field(f, 1)
	uid, name, err := pveacl.ParseTokenID(id)
	if err != nil {
		p.warn("ignore invalid tokenid '%s'", id)
		return
	}
	expire, ok := parseExpire(field(f, 2))
	if !ok {
		p.warn("ignore token '%s' - (illegal characters in expire '%s')", id, field(f, 2))
		return
	}
	u, exists := p.cfg.Users[uid]
	if !exists {
		p.warn("ignore token '%s' - user does not exist", id)
		return
	}
	if u.Tokens == nil {
		u.Tokens = map[string]pveacl.Token{}
	}
	t := u.Tokens[name]
	t.Privsep = perlTrue(field(f, 3))
	t.Expire = expire
	if c := field(f, 4); perlTrue(c) {
		t.Comment = truthyText(decodeText(c))
	}
	u.Tokens[name] = t
	p.cfg.Users[uid] = u
}

func (p *parser) group(f []string) {
	id := field(f, 1)
	if pveacl.ValidGroupID(id) != nil {
		p.warn("ignore group '%s' - invalid characters in group name", id)
		return
	}
	g := p.cfg.Groups[id]
	if c := field(f, 3); perlTrue(c) {
		g.Comment = truthyText(decodeText(c))
	}
	for _, m := range p.items(field(f, 2)) {
		if !pveacl.ValidUserID(m) {
			p.warn("ignore invalid group member '%s'", m)
			continue
		}
		if _, ok := p.cfg.Users[m]; !ok {
			p.warn("ignore invalid group member '%s'", m)
		}
		g.AddMember(m)
	}
	p.cfg.Groups[id] = g
}

func (p *parser) role(f []string) {
	id := field(f, 1)
	if pveacl.ValidRoleID(id) != nil {
		p.warn("ignore role '%s' - invalid characters in role name", id)
		return
	}
	if pveacl.IsBuiltinRole(id) {
		p.warn("ignore role '%s' - built-in roles cannot be changed", id)
		return
	}
	r := p.cfg.Roles[id]
	for _, priv := range pveacl.SplitList(field(f, 2)) {
		if !pveacl.ValidPrivilege(p.cfg.Version, priv) {
			p.warn("ignore invalid privilege '%s'", priv)
			continue
		}
		r.Privs = append(r.Privs, priv)
	}
	slices.Sort(r.Privs)
	r.Privs = slices.Compact(r.Privs)
	p.cfg.Roles[id] = r
}

// items splits a list of names. A NUL-separated list can hold names with a
// comma, semicolon or space, which the writer's comma-joined list could not
// carry back; such names are ignored with a warning.
func (p *parser) items(list string) []string {
	all := pveacl.SplitList(list)
	out := all[:0]
	for _, it := range all {
		if strings.ContainsAny(it, ",; \t\n\v\f\r") {
			p.warn("ignore '%s' - a list item cannot contain a separator", it)
			continue
		}
		out = append(out, it)
	}
	return out
}

func (p *parser) roleExists(id string) bool {
	if _, ok := p.cfg.Roles[id]; ok {
		return true
	}
	return pveacl.IsBuiltinRole(id)
}

func (p *parser) acl(f []string) {
	propagate := perlTrue(field(f, 1))
	path, err := pveacl.NormalizePath(field(f, 2))
	if err != nil {
		p.warn("ignore invalid path in acl '%s'", field(f, 2))
		return
	}
	for _, role := range pveacl.SplitList(field(f, 4)) {
		if pveacl.ValidRoleID(role) != nil {
			p.warn("ignore invalid role name '%s' in acl", role)
			continue
		}
		if !p.roleExists(role) {
			p.warn("ignore invalid acl role '%s'", role)
			continue
		}
		for _, s := range p.items(field(f, 3)) {
			p.aclSubject(path, s, role, propagate)
		}
	}
}

func (p *parser) aclSubject(path, s, role string, propagate bool) {
	if m := groupSubjectRe.FindStringSubmatch(s); m != nil && pveacl.ValidGroupID(m[1]) == nil {
		if _, ok := p.cfg.Groups[m[1]]; !ok {
			p.warn("ignore invalid acl group '%s'", m[1])
		}
		p.cfg.ACL[pveacl.ACLKey{Path: path, Kind: pveacl.KindGroup, Subject: m[1], Role: role}] = propagate
		return
	}
	if pveacl.ValidUserID(s) {
		if _, ok := p.cfg.Users[s]; !ok {
			p.warn("ignore invalid acl member '%s'", s)
		}
		if s != "root@pam" {
			p.cfg.ACL[pveacl.ACLKey{Path: path, Kind: pveacl.KindUser, Subject: s, Role: role}] = propagate
		}
		return
	}
	if pveacl.IsTokenID(s) {
		if _, ok := p.cfg.Token(s); !ok {
			p.warn("ignore invalid acl token '%s'", s)
			return
		}
		p.cfg.ACL[pveacl.ACLKey{Path: path, Kind: pveacl.KindToken, Subject: s, Role: role}] = propagate
		return
	}
	p.warn("invalid user/group '%s' in acl", s)
}

func (p *parser) pool(f []string) {
	id := field(f, 1)
	if pveacl.ValidPoolID(id) != nil {
		p.warn("ignore pool '%s' - invalid characters in pool name", id)
		return
	}
	for cur := id; cur != ""; cur = pveacl.PoolParent(cur) {
		if _, ok := p.cfg.Pools[cur]; !ok {
			p.cfg.Pools[cur] = pveacl.Pool{}
		}
	}
	pool := p.cfg.Pools[id]
	if c := field(f, 2); perlTrue(c) {
		pool.Comment = truthyText(decodeText(c))
	}
	for _, s := range pveacl.SplitList(field(f, 3)) {
		if !digitsRe.MatchString(s) {
			p.warn("ignore invalid vmid '%s' in pool '%s'", s, id)
			continue
		}
		vmid, err := strconv.Atoi(s)
		if err != nil || vmid > 1<<31 {
			p.warn("ignore invalid vmid '%s' in pool '%s'", s, id)
			continue
		}
		if _, dup := p.vmPool[vmid]; dup {
			p.warn("ignore duplicate vmid '%d' in pool '%s'", vmid, id)
			continue
		}
		p.vmPool[vmid] = id
		pool.AddVM(vmid)
	}
	for _, s := range pveacl.SplitList(field(f, 4)) {
		if pveacl.ValidStorageID(s) != nil {
			p.warn("ignore invalid storage '%s' in pool '%s'", s, id)
			continue
		}
		pool.AddStorage(s)
	}
	p.cfg.Pools[id] = pool
}
