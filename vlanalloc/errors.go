package vlanalloc

import (
	"errors"
	"fmt"
	"strconv"
)

// Categories. Every error this package returns wraps exactly one of them, so
// callers pick a condition reason with errors.Is.
var (
	// ErrInvalidRange: a vlanRanges entry does not parse (see *RangeError).
	ErrInvalidRange = errors.New("invalid VLAN range")
	// ErrInvalidZone: reserved IDs or static assignments are unusable.
	ErrInvalidZone = errors.New("invalid VLAN zone")
	// ErrExhausted: every allocatable ID of the zone is used.
	ErrExhausted = errors.New("no free VLAN left in the zone")
	// ErrNamespaceNotAllowed: the zone's namespaceSelector does not select
	// the network's namespace.
	ErrNamespaceNotAllowed = errors.New("namespace not allowed in the zone")
	// ErrNamespaceCap: the network's namespace already holds as many IDs
	// of the zone as the zone's cap allows (see *NamespaceCapError).
	ErrNamespaceCap = errors.New("namespace at the zone's cap")
	// ErrConflict: the ID a network must have is held by someone else (see
	// *ConflictError).
	ErrConflict = errors.New("VLAN conflict")
	// ErrProviderMismatch: the network's Vlan exists on another provider
	// network (see *ProviderMismatchError).
	ErrProviderMismatch = errors.New("VLAN on another provider network")
	// ErrUnusableVlan: the network's existing Vlan carries an ID outside
	// 1-4094 (0 is untagged, 4095 reserved), which no Proxmox NIC accepts.
	ErrUnusableVlan = errors.New("Vlan ID outside 1-4094")
	// ErrTaken: a Reserver found the ID reserved by another network (see
	// *TakenError).
	ErrTaken = errors.New("VLAN already reserved")
)

// RangeProblem says what is wrong with a range.
type RangeProblem int

// The three ways a range entry can be wrong.
const (
	NotANumber RangeProblem = iota + 1
	OutOfBounds
	Backwards
)

// RangeError is a vlanRanges entry that does not parse. Its message is one
// of the three the zone's users see:
//
//	vlan range "<r>": <n> is outside 1-4094
//	vlan range "<r>": "<x>" is not a number
//	vlan range "<r>" ends before it starts
type RangeError struct {
	// Range is the entry as written.
	Range string
	// Value is the offending bound (empty for Backwards).
	Value string
	// Problem is what is wrong with it.
	Problem RangeProblem
}

func (e *RangeError) Error() string {
	switch e.Problem {
	case OutOfBounds:
		return fmt.Sprintf("vlan range %q: %s is outside %d-%d", e.Range, e.Value, MinVID, MaxVID)
	case Backwards:
		return fmt.Sprintf("vlan range %q ends before it starts", e.Range)
	default:
		return fmt.Sprintf("vlan range %q: %q is not a number", e.Range, e.Value)
	}
}

// Unwrap makes errors.Is(err, ErrInvalidRange) true.
func (e *RangeError) Unwrap() error { return ErrInvalidRange }

// ConflictCause says why a network must have the contested ID.
type ConflictCause int

const (
	// HeldElsewhere is an ID the network keeps (its Vlan's or its
	// reservation's) that another holder has too (VLANConflict).
	HeldElsewhere ConflictCause = iota
	// NameTaken is a Vlan of the network's name labelled for another
	// network (VLANNameTaken).
	NameTaken
	// StaticInUse is the ID of the network's static assignment, which
	// another holder has (StaticVLANInUse).
	StaticInUse
)

// ConflictError says who holds the ID a network must keep or was pinned to.
type ConflictError struct {
	// VID is the contested ID.
	VID int
	// Provider is the provider network it is contested on.
	Provider string
	// Network is the network that asked.
	Network NetworkRef
	// Holder describes the other holder: `Vlan "x"`, `network ns/name` or
	// `static assignment of ns/name`.
	Holder string
	// Cause says why the network must have VID.
	Cause ConflictCause
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("VLAN %d on provider network %q is held by %s, not by network %s",
		e.VID, e.Provider, e.Holder, e.Network)
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// ProviderMismatchError is a network whose Vlan already exists on another
// provider network than the zone's.
type ProviderMismatchError struct {
	Vlan     string
	Provider string
	Want     string
}

func (e *ProviderMismatchError) Error() string {
	return fmt.Sprintf("Vlan %q is on provider network %q, but the zone uses %q", e.Vlan, e.Provider, e.Want)
}

// Unwrap makes errors.Is(err, ErrProviderMismatch) true.
func (e *ProviderMismatchError) Unwrap() error { return ErrProviderMismatch }

// TakenError is returned by a Reserver when another network holds the ID.
type TakenError struct {
	Provider string
	// Holder is the reservation found; its Network is empty when the holder
	// could not be read back.
	Holder Reservation
}

func (e *TakenError) Error() string {
	who := "another network"
	if e.Holder.Network.Name != "" {
		who = "network " + e.Holder.Network.String()
	}
	return "VLAN " + strconv.Itoa(e.Holder.VID) + " on provider network " + strconv.Quote(e.Provider) + " is reserved by " + who
}

// Unwrap makes errors.Is(err, ErrTaken) true.
func (e *TakenError) Unwrap() error { return ErrTaken }

// NamespaceCapError refuses a new ID to a network whose namespace already
// has Held networks holding an ID of Zone, the zone's Cap.
type NamespaceCapError struct {
	Network NetworkRef
	Zone    string
	Cap     int
	Held    int
}

func (e *NamespaceCapError) Error() string {
	return fmt.Sprintf("cannot allocate a VLAN for %s: namespace %q holds %d VLANs of zone %q, its cap is %d",
		e.Network, e.Network.Namespace, e.Held, e.Zone, e.Cap)
}

// Unwrap returns ErrNamespaceCap.
func (e *NamespaceCapError) Unwrap() error { return ErrNamespaceCap }
