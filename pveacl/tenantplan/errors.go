package tenantplan

import (
	"errors"
	"fmt"
)

// Sentinel errors of planning; match them with errors.Is.
var (
	// ErrInvalidSpec: a tenant specification that cannot be planned.
	ErrInvalidSpec = errors.New("invalid tenant specification")
	// ErrRefused: a change the Proxmox VE API would refuse.
	ErrRefused = errors.New("refused by the Proxmox VE API model")
	// ErrUnconfirmedRemoval: the plan would remove rights from an existing
	// user or token it did not create, and WithConfirmedRemovals does not
	// name it.
	ErrUnconfirmedRemoval = errors.New("the plan would remove rights of a user or token it did not create")
)

// fieldError is one problem in a tenant specification, located by field.
type fieldError struct {
	Field string // e.g. tenants[1].storage
	Msg   string
}

func (e *fieldError) Error() string { return e.Field + ": " + e.Msg }

// Unwrap returns ErrInvalidSpec.
func (e *fieldError) Unwrap() error { return ErrInvalidSpec }

// refusedError is the answer the Proxmox VE API would give to a change.
type refusedError struct {
	Change Change
	Msg    string // PVE's message
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("cannot %s: %s", e.Change.Op.Describe(), e.Msg)
}

// Unwrap returns ErrRefused.
func (e *refusedError) Unwrap() error { return ErrRefused }
