package ovngateway

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalid marks input that can never work, such as an empty router
	// port name or a malformed endpoint list. Retrying does not help.
	ErrInvalid = errors.New("invalid input")
	// ErrNBUnavailable marks a pass that could not reach the northbound
	// database: not connected, a timeout, or a lost connection. Retry later.
	ErrNBUnavailable = errors.New("OVN northbound database unavailable")
	// ErrConflict marks a transaction the database refused because its rows
	// changed after they were read (a failed wait, a row gone, a name taken).
	// The next pass reads the new rows and decides again.
	ErrConflict = errors.New("OVN northbound rows changed during the pass")
)

// TransactionError describes the operations of a transaction that failed.
type TransactionError struct {
	// Details has one entry per failed operation: "<op> <table>: <error>".
	Details []string
}

func (e *TransactionError) Error() string {
	return "OVN northbound transaction failed: " + strings.Join(e.Details, "; ")
}

// Is makes a TransactionError match ErrConflict: every failure the server
// reports for these operations comes from rows that changed under them.
func (e *TransactionError) Is(target error) bool { return target == ErrConflict }

// wrapNB marks err as an NB availability problem unless it already says
// something more precise.
func wrapNB(what string, err error) error {
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNBUnavailable) {
		return fmt.Errorf("cannot %s: %w", what, err)
	}
	return fmt.Errorf("cannot %s: %w: %w", what, ErrNBUnavailable, err)
}
