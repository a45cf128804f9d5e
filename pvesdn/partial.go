package pvesdn

import (
	"context"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// written is what one apply wrote before PUT /cluster/sdn.
type written struct {
	zone  string
	vnets []VNet
}

func (w *written) empty() bool { return w.zone == "" && len(w.vnets) == 0 }

// PartialWriteError is a write of Apply that failed after others had
// succeeded: what was written, and either that it was rolled back under
// the SDN lock or the commands that undo it.
type PartialWriteError struct {
	// Zone is the SDN zone the apply created, "" when it existed.
	Zone string `json:"zone,omitempty"`
	// VNets are the VNets the apply created, in order.
	VNets []VNet `json:"vnets"`
	// RolledBack is true when the SDN lock's rollback removed them.
	RolledBack bool `json:"rolledBack"`
	// Undo holds the commands that remove them, when they were not rolled
	// back: VNets first, then the zone.
	Undo []string `json:"undo,omitempty"`
	// Err is the write that failed (and a failed rollback).
	Err error `json:"-"`
}

// maxShown bounds the VNets and commands an error lists.
const maxShown = 8

func (e *PartialWriteError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	b.WriteString("; before it this apply wrote ")
	var parts []string
	if e.Zone != "" {
		parts = append(parts, "SDN zone "+e.Zone)
	}
	if len(e.VNets) > 0 {
		ids := make([]string, 0, len(e.VNets))
		for _, v := range e.VNets {
			ids = append(ids, v.ID)
		}
		parts = append(parts, sprintf("%d VNet(s) %s", len(ids), shortList(ids)))
	}
	b.WriteString(strings.Join(parts, " and "))
	if e.RolledBack {
		b.WriteString(", and rolled them back under the SDN lock: nothing of this apply remains")
		return b.String()
	}
	b.WriteString(" (written, not applied): run sdn apply again to finish them (it takes its own pending changes along), or remove them with ")
	b.WriteString(shortList(e.Undo))
	return b.String()
}

func (e *PartialWriteError) Unwrap() error { return e.Err }

// shortList joins items, at most maxShown, then how many more.
func shortList(items []string) string {
	if len(items) <= maxShown {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxShown], ", ") + sprintf(" and %d more", len(items)-maxShown)
}

// failed reports a failed write: with the SDN lock it rolls back (which
// also releases the lock); a write after which nothing of this apply
// remains is err alone; otherwise a *PartialWriteError.
func (w *written) failed(ctx context.Context, c pveapi.Client, token string, err error) error {
	rolledBack := false
	if token != "" {
		if rerr := c.Post(ctx, "/cluster/sdn/rollback", map[string]any{"lock-token": token}, nil); rerr != nil {
			err = errorf("%w (and the rollback failed: %s)", err, errText(rerr))
		} else {
			rolledBack = true
		}
	}
	if w.empty() {
		return err
	}
	pe := &PartialWriteError{Zone: w.zone, VNets: w.vnets, RolledBack: rolledBack, Err: err}
	if !rolledBack {
		for _, v := range w.vnets {
			pe.Undo = append(pe.Undo, "pvesh delete /cluster/sdn/vnets/"+v.ID)
		}
		if w.zone != "" {
			pe.Undo = append(pe.Undo, "pvesh delete /cluster/sdn/zones/"+w.zone)
		}
	}
	return pe
}
