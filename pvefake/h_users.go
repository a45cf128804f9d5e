package pvefake

import (
	"errors"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// Formats of pve-access-control's parameters.
func fmtUserID(v string) error   { _, _, err := pveacl.ParseUserID(v); return err }
func fmtTokenSub(v string) error { return pveacl.ValidTokenName(v) }

func fmtList(one func(string) error) func(string) error {
	return func(v string) error {
		for _, item := range pveacl.SplitList(v) {
			if err := one(item); err != nil {
				return err
			}
		}
		return nil
	}
}

func fmtTokenID(v string) error {
	if !pveacl.IsTokenID(v) {
		return errors.New("value '" + v + "' does not look like a valid token ID")
	}
	return nil
}

var zero = 0

var userFields = []param{opt("enable", tBool), {name: "expire", typ: tInt, optional: true, min: &zero},
	opt("firstname", tString), opt("lastname", tString), opt("email", tString), opt("comment", tString),
	opt("keys", tString), {name: "groups", optional: true, format: fmtList(pveacl.ValidGroupID)}}

var tokenFields = []param{{name: "expire", typ: tInt, optional: true, min: &zero}, opt("privsep", tBool),
	opt("comment", tString)}

func userRoutes() []*route {
	uid := param{name: "userid", format: fmtUserID}
	tid := param{name: "tokenid", format: fmtTokenSub}
	tokenCheck := or{useridParam("self"), useridGroup{privs: []string{"User.Modify"}}}
	return []*route{
		{method: "GET", path: "/access/users", schema: []param{opt("enabled", tBool), opt("full", tBool)}, handle: listUsers},
		{method: "POST", path: "/access/users", schema: append([]param{uid, {name: "password", optional: true, maxLen: 64}}, userFields...),
			check:  and{useridParam("Realm.AllocateUser"), useridGroup{privs: []string{"User.Modify"}, groupsParam: "create"}},
			handle: createUser},
		{method: "GET", path: "/access/users/{userid}", schema: []param{uid},
			check: useridGroup{privs: []string{"User.Modify", "Sys.Audit"}}, handle: readUser},
		{method: "PUT", path: "/access/users/{userid}", schema: append([]param{uid, {name: "append", typ: tBool, optional: true, requires: "groups"}}, userFields...),
			check: useridGroup{privs: []string{"User.Modify"}, groupsParam: "update"}, handle: updateUser},
		{method: "DELETE", path: "/access/users/{userid}", schema: []param{uid},
			check: and{useridParam("Realm.AllocateUser"), useridGroup{privs: []string{"User.Modify"}}}, handle: deleteUser},
		{method: "GET", path: "/access/users/{userid}/token", schema: []param{uid}, check: tokenCheck, handle: listTokens},
		{method: "GET", path: "/access/users/{userid}/token/{tokenid}", schema: []param{uid, tid}, check: tokenCheck, handle: readToken},
		{method: "POST", path: "/access/users/{userid}/token/{tokenid}", schema: append([]param{uid, tid}, tokenFields...),
			check: tokenCheck, handle: createToken},
		{method: "PUT", path: "/access/users/{userid}/token/{tokenid}",
			schema: append([]param{uid, tid, opt("regenerate", tBool), opt("delete", tString)}, tokenFields...),
			check:  tokenCheck, handle: updateToken},
		{method: "DELETE", path: "/access/users/{userid}/token/{tokenid}", schema: []param{uid, tid}, check: tokenCheck, handle: deleteToken},
	}
}

func realmType(uid string) string {
	switch {
	case strings.HasSuffix(uid, "@pam"):
		return "pam"
	case strings.HasSuffix(uid, "@pve"):
		return "pve"
	}
	return ""
}

func userEntry(id string, u pveacl.User) map[string]any {
	e := map[string]any{"userid": id, "enable": b2i(u.Enable), "expire": u.Expire}
	for k, v := range map[string]string{"firstname": u.Firstname, "lastname": u.Lastname, "email": u.Email,
		"comment": u.Comment, "keys": u.Keys} {
		if v != "" {
			e[k] = v
		}
	}
	if rt := realmType(id); rt != "" {
		e["realm-type"] = rt
	}
	return e
}

func tokenInfo(t pveacl.Token) map[string]any {
	e := map[string]any{"privsep": b2i(t.Privsep), "expire": t.Expire}
	if t.Comment != "" {
		e["comment"] = t.Comment
	}
	return e
}

func listUsers(c *call) (any, *apiError) {
	privs := []string{"User.Modify", "Sys.Audit"}
	canMod, _ := c.checkAny("/access/groups", privs, true)
	groups := c.filterGroups(privs)
	out := []map[string]any{}
	for _, id := range sortedKeys(c.s.cfg.Users) {
		if !canMod && id != c.auth && !c.groupMember(groups, id) {
			continue
		}
		u := c.s.cfg.Users[id]
		if c.p.has("enabled") && c.p.flag("enabled", false) != u.Enable {
			continue
		}
		e := userEntry(id, u)
		if c.p.flag("full", false) {
			e["groups"] = strings.Join(c.s.cfg.GroupsOf(id), ",")
			toks := []map[string]any{}
			for _, name := range sortedKeys(u.Tokens) {
				t := tokenInfo(u.Tokens[name])
				t["tokenid"] = name
				toks = append(toks, t)
			}
			e["tokens"] = toks
		}
		out = append(out, e)
	}
	return out, nil
}

func createUser(c *call) (any, *apiError) {
	id := c.p["userid"]
	if _, ok := c.s.cfg.Users[id]; ok {
		return nil, die("create user failed: user '%s' already exists", id)
	}
	groups := pveacl.SplitList(c.p["groups"])
	for _, g := range groups {
		if _, ok := c.s.cfg.Groups[g]; !ok {
			return nil, die("create user failed: no such group '%s'", g)
		}
	}
	u := pveacl.User{Enable: c.p.flag("enable", true), Expire: int64(c.p.int("expire")), Tokens: map[string]pveacl.Token{}}
	setUserFields(&u, c.p)
	c.s.cfg.Users[id] = u
	for _, g := range groups {
		addGroupMember(c.s, g, id)
	}
	c.s.touch()
	return nil, nil
}

func setUserFields(u *pveacl.User, p params) {
	for k, dst := range map[string]*string{"firstname": &u.Firstname, "lastname": &u.Lastname, "email": &u.Email,
		"comment": &u.Comment, "keys": &u.Keys} {
		if p.has(k) {
			*dst = p[k]
		}
	}
}

func readUser(c *call) (any, *apiError) {
	id := c.p["userid"]
	u, ok := c.s.cfg.Users[id]
	if !ok {
		return nil, die("no such user ('%s')", id)
	}
	e := userEntry(id, u)
	delete(e, "userid")
	delete(e, "realm-type")
	e["groups"] = c.s.cfg.GroupsOf(id)
	toks := map[string]any{}
	for name, t := range u.Tokens {
		toks[name] = tokenInfo(t)
	}
	e["tokens"] = toks
	return e, nil
}

func updateUser(c *call) (any, *apiError) {
	id := c.p["userid"]
	u, ok := c.s.cfg.Users[id]
	if !ok {
		return nil, die("update user failed: no such user ('%s')", id)
	}
	if c.p.has("enable") {
		u.Enable = c.p.flag("enable", true)
	}
	if c.p.has("expire") {
		u.Expire = int64(c.p.int("expire"))
	}
	setUserFields(&u, c.p)
	if c.p.has("groups") {
		groups := pveacl.SplitList(c.p["groups"])
		for _, g := range groups {
			if _, ok := c.s.cfg.Groups[g]; !ok {
				return nil, die("update user failed: no such group '%s'", g)
			}
		}
		if !c.p.flag("append", false) {
			removeFromGroups(c.s, id)
		}
		for _, g := range groups {
			addGroupMember(c.s, g, id)
		}
	}
	c.s.cfg.Users[id] = u
	c.s.touch()
	return nil, nil
}

func removeFromGroups(s *state, uid string) {
	for name, g := range s.cfg.Groups {
		var keep []string
		for _, m := range g.Members {
			if m != uid {
				keep = append(keep, m)
			}
		}
		g.Members = keep
		s.cfg.Groups[name] = g
	}
}

func deleteUser(c *call) (any, *apiError) {
	id := c.p["userid"]
	for name := range c.s.cfg.Users[id].Tokens {
		c.s.deleteToken(id, name)
	}
	delete(c.s.cfg.Users, id)
	removeFromGroups(c.s, id)
	c.s.dropSubjectACL(pveacl.KindUser, id)
	return nil, nil
}

func (c *call) token() (pveacl.Token, *apiError) {
	uid, name := c.p["userid"], c.p["tokenid"]
	u, ok := c.s.cfg.Users[uid]
	if !ok {
		return pveacl.Token{}, die("no such user ('%s')", uid)
	}
	t, ok := u.Tokens[name]
	if !ok {
		return pveacl.Token{}, die("no such token '%s' for user '%s'", name, uid)
	}
	return t, nil
}

func listTokens(c *call) (any, *apiError) {
	uid := c.p["userid"]
	u, ok := c.s.cfg.Users[uid]
	if !ok {
		return nil, die("no such user ('%s')", uid)
	}
	out := []map[string]any{}
	for _, name := range sortedKeys(u.Tokens) {
		e := tokenInfo(u.Tokens[name])
		e["tokenid"] = name
		out = append(out, e)
	}
	return out, nil
}

func readToken(c *call) (any, *apiError) {
	t, err := c.token()
	if err != nil {
		return nil, err
	}
	return tokenInfo(t), nil
}

func createToken(c *call) (any, *apiError) {
	uid, name := c.p["userid"], c.p["tokenid"]
	u, ok := c.s.cfg.Users[uid]
	if !ok {
		return nil, die("no such user ('%s')", uid)
	}
	if _, exists := u.Tokens[name]; exists {
		return nil, paramErr("tokenid", "Token already exists.")
	}
	t := pveacl.Token{Privsep: c.p.flag("privsep", true), Expire: int64(c.p.int("expire")), Comment: c.p["comment"]}
	if u.Tokens == nil {
		u.Tokens = map[string]pveacl.Token{}
	}
	u.Tokens[name] = t
	c.s.cfg.Users[uid] = u
	id := pveacl.TokenID(uid, name)
	secret := c.s.newUUID()
	c.s.secrets[id] = secret
	c.s.touch()
	info := map[string]any{"privsep": b2i(t.Privsep)}
	if c.p.has("expire") {
		info["expire"] = t.Expire
	}
	if t.Comment != "" {
		info["comment"] = t.Comment
	}
	return map[string]any{"info": info, "value": secret, "full-tokenid": id}, nil
}

func updateToken(c *call) (any, *apiError) {
	if c.p.has("regenerate") && c.s.cfg.Version < pveacl.PVE9 {
		return nil, paramErr("regenerate", "property is not defined in schema and the schema does not allow additional properties")
	}
	t, err := c.token()
	if err != nil {
		return nil, err
	}
	if c.p.has("privsep") {
		t.Privsep = c.p.flag("privsep", true)
	}
	if c.p.has("expire") {
		t.Expire = int64(c.p.int("expire"))
	}
	if c.p.has("comment") {
		t.Comment = c.p["comment"]
	}
	for _, k := range pveacl.SplitList(c.p["delete"]) {
		if k != "comment" {
			return nil, wrapDie("updating token info failed", paramErr("delete", "unknown option '%s'", k))
		}
		t.Comment = ""
	}
	uid, name := c.p["userid"], c.p["tokenid"]
	c.s.cfg.Users[uid].Tokens[name] = t
	c.s.touch()
	out := tokenInfo(t)
	if c.p.flag("regenerate", false) {
		id := pveacl.TokenID(uid, name)
		c.s.secrets[id] = c.s.newUUID()
		out["value"], out["full-tokenid"] = c.s.secrets[id], id
	}
	return out, nil
}

func deleteToken(c *call) (any, *apiError) {
	if _, err := c.token(); err != nil {
		return nil, err
	}
	c.s.deleteToken(c.p["userid"], c.p["tokenid"])
	return nil, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
