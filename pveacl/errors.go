package pveacl

import (
	"errors"
	"fmt"
)

// Sentinel errors name the category of a failure; match them with errors.Is.
var (
	// ErrInvalidVersion: a Proxmox VE major version other than 8 or 9.
	ErrInvalidVersion = errors.New("unsupported Proxmox VE version")
	// ErrInvalidPrivilege: a privilege the version does not know.
	ErrInvalidPrivilege = errors.New("invalid privilege")
	// ErrInvalidID: a malformed user, token, group, role, pool or storage id.
	ErrInvalidID = errors.New("invalid identifier")
	// ErrInvalidPath: an ACL path PVE would refuse.
	ErrInvalidPath = errors.New("invalid ACL path")
)

// IDError describes a malformed identifier, with PVE's own wording.
type IDError struct {
	Kind string // "user", "token", "group", "role", "pool", "storage", "realm", "path"
	ID   string
	Msg  string
}

func (e *IDError) Error() string { return e.Msg }

// Unwrap returns ErrInvalidPath for paths and ErrInvalidID otherwise.
func (e *IDError) Unwrap() error {
	if e.Kind == "path" {
		return ErrInvalidPath
	}
	return ErrInvalidID
}

func idErr(kind, id, format string, args ...any) error {
	return &IDError{Kind: kind, ID: id, Msg: fmt.Sprintf(format, args...)}
}
