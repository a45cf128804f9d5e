package pveacl

import (
	"regexp"
	"strconv"
	"strings"
)

// Identifier grammars of pve-access-control. The user part excludes every
// character Perl's \s matches, ':' and '/'.
const (
	realmPattern = `[A-Za-z][A-Za-z0-9.\-_]+`
	userPattern  = `[^\t\n\v\f\r :/]+`
	idPattern    = `[A-Za-z0-9.\-_]+`
)

var (
	userIDRe    = regexp.MustCompile(`^(` + userPattern + `)@(` + realmPattern + `)$`)
	tokenIDRe   = regexp.MustCompile(`^((` + userPattern + `)@(` + realmPattern + `))!(` + realmPattern + `)$`)
	authIDRe    = regexp.MustCompile(`^` + userPattern + `@` + realmPattern + `(?:!` + realmPattern + `)?$`)
	realmRe     = regexp.MustCompile(`^` + realmPattern + `$`)
	groupRe     = regexp.MustCompile(`^` + idPattern + `$`)
	poolRe      = regexp.MustCompile(`^` + idPattern + `(?:/` + idPattern + `){0,2}$`)
	storageRe   = regexp.MustCompile(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]$`)
	pathCharsRe = regexp.MustCompile(`^[A-Za-z0-9.\-_/]+$`)
	checkPathRe = regexp.MustCompile(`^(?:/|/access|/access/groups|/access/groups/[A-Za-z0-9.\-_]+|/access/realm|/access/realm/[A-Za-z0-9.\-_]+` +
		`|/nodes|/nodes/[A-Za-z0-9.\-_]+|/pool|/pool/[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}` +
		`|/sdn|/sdn/controllers|/sdn/controllers/[A-Za-z0-9_\-]+|/sdn/dns|/sdn/dns/[A-Za-z0-9]+|/sdn/fabrics|/sdn/fabrics/[A-Za-z0-9]+` +
		`|/sdn/ipams|/sdn/ipams/[A-Za-z0-9]+|/sdn/prefix-lists|/sdn/prefix-lists/[A-Za-z0-9]+|/sdn/route-maps|/sdn/route-maps/[A-Za-z0-9]+` +
		`|/sdn/zones|/sdn/zones/[A-Za-z0-9.\-_]+|/sdn/zones/[A-Za-z0-9.\-_]+/[A-Za-z0-9.\-_]+|/sdn/zones/[A-Za-z0-9.\-_]+/[A-Za-z0-9.\-_]+/[1-9][0-9]{0,3}` +
		`|/storage|/storage/[A-Za-z0-9.\-_]+|/vms|/vms/[1-9][0-9]{2,}|/mapping|/mapping/[A-Za-z0-9.\-_]+|/mapping/[A-Za-z0-9.\-_]+/[A-Za-z0-9.\-_]+)$`)
)

// ParseUserID checks a user id (user@realm) the way PVE's verify_username
// does and returns its parts. The error texts are PVE's.
func ParseUserID(id string) (user, realm string, err error) {
	if len(id) < 3 {
		return "", "", idErr("user", id, "user name '%s' is too short", id)
	}
	if len(id) > 64 {
		return "", "", idErr("user", id, "user name '%s' is too long (%d > 64)", id, len(id))
	}
	m := userIDRe.FindStringSubmatch(id)
	if m == nil {
		return "", "", idErr("user", id, "value '%s' does not look like a valid user name", id)
	}
	return m[1], m[2], nil
}

// ValidUserID reports whether id is a valid user id.
func ValidUserID(id string) bool { _, _, err := ParseUserID(id); return err == nil }

// ParseTokenID splits a full token id (user@realm!token) into the owning
// user id and the token's sub-id.
func ParseTokenID(id string) (userID, tokenName string, err error) {
	m := tokenIDRe.FindStringSubmatch(id)
	if m == nil {
		return "", "", idErr("token", id, "'%s' is not a valid token ID - not able to split into user and token parts", id)
	}
	return m[1], m[4], nil
}

// IsTokenID reports whether id has the form of a full token id.
func IsTokenID(id string) bool { return tokenIDRe.MatchString(id) }

// TokenID joins a user id and a token sub-id.
func TokenID(userID, tokenName string) string { return userID + "!" + tokenName }

// ValidAuthID reports whether id is a user id or a full token id, as the
// userid parameter of GET /access/permissions requires.
func ValidAuthID(id string) bool { return authIDRe.MatchString(id) }

// ValidTokenName checks a token sub-id: at least 2 characters, starting with
// a letter.
func ValidTokenName(name string) error {
	if !realmRe.MatchString(name) {
		return idErr("token", name, "token name '%s' is invalid: it needs at least 2 characters of [A-Za-z0-9.-_], starting with a letter", name)
	}
	return nil
}

// validRealm checks a realm name.
func validRealm(realm string) error {
	if !realmRe.MatchString(realm) || len(realm) > 32 {
		return idErr("realm", realm, "value '%s' does not look like a valid realm", realm)
	}
	return nil
}

// ValidGroupID checks a group id.
func ValidGroupID(id string) error {
	if !groupRe.MatchString(id) {
		return idErr("group", id, "group name '%s' contains invalid characters", id)
	}
	return nil
}

// ValidRoleID checks a role id.
func ValidRoleID(id string) error {
	if !groupRe.MatchString(id) {
		return idErr("role", id, "role name '%s' contains invalid characters", id)
	}
	return nil
}

// ValidNewRoleID checks a role id for creation: custom roles must not use
// the reserved PVE prefix.
func ValidNewRoleID(id string) error {
	if err := ValidRoleID(id); err != nil {
		return err
	}
	if strings.HasPrefix(strings.ToLower(id), "pve") {
		return idErr("role", id, "cannot use role ID starting with the (case-insensitive) 'PVE' namespace")
	}
	return nil
}

// ValidPoolID checks a pool id: one to three levels of [A-Za-z0-9.-_].
func ValidPoolID(id string) error {
	if strings.Count(strings.TrimRight(id, "/"), "/") >= 3 {
		return idErr("pool", id, "pool name '%s' nested too deeply (max levels = 3)", id)
	}
	if !poolRe.MatchString(id) {
		return idErr("pool", id, "pool name '%s' contains invalid characters", id)
	}
	return nil
}

// ValidNewPoolID adds the checks PVE makes when a pool is created: each
// level starts with a letter.
func ValidNewPoolID(id string) error {
	if err := ValidPoolID(id); err != nil {
		return err
	}
	for _, level := range strings.Split(id, "/") {
		if c := level[0]; (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return idErr("pool", id, "pool name must start with a letter")
		}
	}
	return nil
}

// ValidStorageID checks a storage id.
func ValidStorageID(id string) error {
	if !storageRe.MatchString(id) {
		return idErr("storage", id, "storage ID '%s' is invalid: use a letter, then letters, digits, '-', '_' or '.', ending in a letter or digit", id)
	}
	return nil
}

// PoolParent returns the parent of a nested pool id ("a/b" for "a/b/c"), or
// "" for a top-level one.
func PoolParent(id string) string {
	if i := strings.LastIndexByte(id, '/'); i > 0 {
		return id[:i]
	}
	return ""
}

// NormalizePath normalises an ACL path as PVE does: repeated slashes
// collapse, a trailing slash goes, a leading slash is added and an empty
// result is "/". It fails when the path is empty or holds characters other
// than letters, digits, '.', '-', '_' and '/'.
func NormalizePath(p string) (string, error) {
	if p == "" || p == "0" {
		return "", idErr("path", p, "invalid ACL path '%s'", p)
	}
	var b strings.Builder
	prevSlash := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' {
			if prevSlash {
				continue
			}
			prevSlash = true
		} else {
			prevSlash = false
		}
		b.WriteByte(c)
	}
	n := strings.TrimSuffix(b.String(), "/")
	if n == "" || n == "0" {
		n = "/"
	}
	if !strings.HasPrefix(n, "/") {
		n = "/" + n
	}
	if !pathCharsRe.MatchString(n) {
		return "", idErr("path", p, "invalid ACL path '%s'", p)
	}
	return n, nil
}

// CheckPath reports whether PVE accepts a normalised path when an ACL entry
// is added through the API (deletes and user.cfg skip this check).
func CheckPath(p string) bool { return checkPathRe.MatchString(p) }

// VMPath is the ACL path of a guest, where its pool's roles apply too.
func VMPath(id int) string { return "/vms/" + strconv.Itoa(id) }

// StoragePath is the ACL path of a storage, where its pools' roles apply too.
func StoragePath(id string) string { return "/storage/" + id }

// PoolPath is the ACL path of a pool.
func PoolPath(id string) string { return "/pool/" + id }
