package pvefake

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// ParseAuthHeader extracts the API token from an Authorization header the
// way pve-http-server's extract_auth_value does for the key "PVEAPIToken":
// the key must start the header or follow whitespace, and be followed by
// '=' or a space; the value runs to the next ';' and is URI-unescaped. It
// reports false when no non-empty value is present.
func ParseAuthHeader(h string) (string, bool) {
	const key = "PVEAPIToken"
	for i := 0; i+len(key) < len(h); i++ {
		if !strings.HasPrefix(h[i:], key) || (i > 0 && !isSpace(h[i-1])) {
			continue
		}
		if c := h[i+len(key)]; c != '=' && c != ' ' {
			continue
		}
		v := h[i+len(key)+1:]
		if j := strings.IndexByte(v, ';'); j >= 0 {
			v = v[:j]
		}
		v = pveacl.Unescape(v)
		return v, v != ""
	}
	return "", false
}

func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v':
		return true
	}
	return false
}

// SplitTokenValue splits "USER@REALM!TOKEN=SECRET" at the last '=' as
// verify_token's /^(.*)=(.*)$/ does; a value with a line break does not
// match that pattern.
func SplitTokenValue(v string) (tokenID, secret string, ok bool) {
	if strings.ContainsAny(v, "\n") {
		return "", "", false
	}
	i := strings.LastIndexByte(v, '=')
	if i < 0 {
		return "", "", false
	}
	return v[:i], v[i+1:], true
}

// errAuth is why an authentication failed. PVE logs it on the server and
// answers only "401 Authentication failed!".
var errAuth = errors.New("authentication failure")

// verifyToken is PVE::AccessControl::verify_token over the state.
func (s *state) verifyToken(value string, now time.Time) (string, error) {
	id, secret, ok := SplitTokenValue(value)
	if !ok {
		return "", fmt.Errorf("%w: no tokenid specified", errAuth)
	}
	uid, name, err := pveacl.ParseTokenID(id)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errAuth, err)
	}
	if err := s.userEnabled(uid, now); err != nil {
		return "", err
	}
	tok, ok := s.cfg.Users[uid].Tokens[name]
	if !ok {
		return "", fmt.Errorf("%w: no such token '%s' for user '%s'", errAuth, name, uid)
	}
	if tok.Expire != 0 && tok.Expire < now.Unix() {
		return "", fmt.Errorf("%w: token '%s' access expired", errAuth, name)
	}
	want, ok := s.secrets[id]
	if !ok || subtle.ConstantTimeCompare([]byte(want), []byte(secret)) != 1 {
		return "", fmt.Errorf("%w: invalid token value!", errAuth)
	}
	return id, nil
}

func (s *state) userEnabled(uid string, now time.Time) error {
	u, ok := s.cfg.Users[uid]
	switch {
	case !ok:
		return fmt.Errorf("%w: no such user ('%s')", errAuth, uid)
	case !u.Enable:
		return fmt.Errorf("%w: user '%s' is disabled", errAuth, uid)
	case u.Expire != 0 && u.Expire < now.Unix():
		return fmt.Errorf("%w: user '%s' access expired", errAuth, uid)
	}
	return nil
}
