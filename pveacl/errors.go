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
	// ErrInvalidSpec: a tenant specification that cannot be planned.
	ErrInvalidSpec = errors.New("invalid tenant specification")
	// ErrRefused: a change the Proxmox VE API would refuse.
	ErrRefused = errors.New("refused by the Proxmox VE API model")
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

// FieldError is one problem in a tenant specification, located by field.
type FieldError struct {
	Field string // e.g. tenants[1].storage
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Unwrap returns ErrInvalidSpec.
func (e *FieldError) Unwrap() error { return ErrInvalidSpec }

// RefusedError is the answer the Proxmox VE API would give to a change.
type RefusedError struct {
	Change Change
	Msg    string // PVE's message
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("cannot %s: %s", e.Change.Op.Describe(), e.Msg)
}

// Unwrap returns ErrRefused.
func (e *RefusedError) Unwrap() error { return ErrRefused }
