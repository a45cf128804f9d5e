package pveacl

import (
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Sentinel errors name the category of a failure; match them with errors.Is.
var (
	// ErrInvalidVersion: a Proxmox VE major version other than 8 or 9.
	ErrInvalidVersion = errors.New("unsupported Proxmox VE version")
	// errInvalidPrivilege: a privilege the version does not know.
	errInvalidPrivilege = errors.New("invalid privilege")
	// errInvalidID: a malformed user, token, group, role, pool or storage id.
	errInvalidID = errors.New("invalid identifier")
	// errInvalidPath: an ACL path PVE would refuse.
	errInvalidPath = errors.New("invalid ACL path")
)

// idError describes a malformed identifier, with PVE's own wording.
type idError struct {
	Kind string // "user", "token", "group", "role", "pool", "storage", "realm", "path"
	ID   string
	Msg  string
}

func (e *idError) Error() string { return e.Msg }

// Unwrap returns errInvalidPath for paths and errInvalidID otherwise.
func (e *idError) Unwrap() error {
	if e.Kind == "path" {
		return errInvalidPath
	}
	return errInvalidID
}

// idErr builds an idError. Its string arguments are the identifier being
// refused, which PVE's wording puts in single quotes: each is cut to
// termsafe.MaxQuoted bytes (termsafe.Cut), so that an identifier of any
// length is named in a line.
func idErr(kind, id, format string, args ...any) error {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = termsafe.Cut(s)
		}
	}
	return &idError{Kind: kind, ID: id, Msg: fmt.Sprintf(format, args...)}
}
