package talostemplate

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Sentinel errors of Create, one per category; the typed errors below wrap
// them and carry the detail.
var (
	// ErrVMIDTaken: PVE's nextid refuses the VMID (a guest has it anywhere
	// in the cluster, or it is outside the cluster's next-id range).
	ErrVMIDTaken = errors.New("VMID not available")
	// ErrIncompleteView reports that the token cannot see every guest, so a template
	// with the same tag set could hide from the check.
	ErrIncompleteView = errors.New("the token cannot see every guest")
	// ErrImageExists: the image volume is on the import storage already.
	ErrImageExists = errors.New("image volume already exists")
	// ErrNoTarget: no node or storage fits, or several do and none was named.
	ErrNoTarget = errors.New("no node or storage to create the template on")
	// ErrTaskFailed: a PVE task ended with an exit status other than OK.
	ErrTaskFailed = errors.New("Proxmox VE task failed")
	// ErrPermissionDenied: PVE answered 403 Permission check failed.
	ErrPermissionDenied = errors.New("permission denied")
)

// CreateError is a failed Create: the step that failed, why, and what the
// run left on the hypervisor (observed after the failure).
type CreateError struct {
	Step Step
	Err  error
	// Left is what stays on the hypervisor; empty when nothing does.
	Left []Leftover
}

func (e *CreateError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cannot %s: %v", e.Step.verb(), e.Err)
	switch {
	case !e.Step.mutates():
		b.WriteString("\nnothing was changed on the hypervisor")
	case len(e.Left) == 0:
		b.WriteString("\nnothing was left on the hypervisor")
	default:
		b.WriteString("\nleft on the hypervisor:")
		for _, l := range e.Left {
			b.WriteString("\n  - " + l.String())
		}
	}
	return b.String()
}

func (e *CreateError) Unwrap() error { return e.Err }

// VMIDTakenError is nextid's refusal of the VMID.
type VMIDTakenError struct {
	VMID int
	// Reason is PVE's text, such as "VM 9000 already exists".
	Reason string
	// Free is the lowest free VMID PVE suggests; 0 when unknown.
	Free int
}

func (e *VMIDTakenError) Error() string {
	msg := fmt.Sprintf("VMID %d cannot be used: %s (GET /cluster/nextid?vmid=%d)", e.VMID, termsafe.Cut(e.Reason), e.VMID)
	if e.Free > 0 {
		msg += fmt.Sprintf("; choose a free VMID, such as %d", e.Free)
	}
	return msg
}

func (e *VMIDTakenError) Unwrap() error { return ErrVMIDTaken }

// ImageExistsError refuses to download over an image volume that is there.
type ImageExistsError struct {
	Node, Storage, VolID string
}

func (e *ImageExistsError) Error() string {
	l := imageLeftover(e.Node, e.Storage, e.VolID)
	return fmt.Sprintf("the image volume %s is already on node %s (left by an earlier run?): build from it with --reuse-image, "+
		"or remove it with: %s (on node %s), or through the API: %s", termsafe.Cut(e.VolID), termsafe.Cut(e.Node), termsafe.Cut(l.Command), termsafe.Cut(e.Node), termsafe.Cut(l.API))
}

func (e *ImageExistsError) Unwrap() error { return ErrImageExists }

// TaskError is a PVE task that ended with an exit status other than OK.
// go-proxmox's Task.Wait is not relied on to report it.
type TaskError struct {
	UPID, Node, Type string
	// ExitStatus is PVE's text, such as "unable to import ...".
	ExitStatus string
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("task %s (%s on node %s) failed: %s", termsafe.Cut(e.UPID), termsafe.Cut(e.Type), termsafe.Cut(e.Node), termsafe.Cut(e.ExitStatus))
}

func (e *TaskError) Unwrap() error { return ErrTaskFailed }

// PermissionError is PVE's 403 for a call of Create, with the privilege to
// grant and everything the call needs.
type PermissionError struct {
	// Call is the request, such as "POST /nodes/pve/storage/local/download-url".
	Call string
	// Path and Privilege are what PVE's check failed on; empty when PVE
	// did not name them.
	Path, Privilege string
	// Needs lists every privilege the call needs.
	Needs string
	// Err is the API error (a *proxmox.APIError).
	Err error
}

func (e *PermissionError) Error() string {
	msg := fmt.Sprintf("%s: %s: ", termsafe.Cut(e.Call), termsafe.Cut(e.Err.Error()))
	if e.Privilege != "" {
		priv, path := termsafe.Cut(e.Privilege), termsafe.Cut(e.Path)
		msg += fmt.Sprintf("the token lacks %s on %s; grant it %s on %s (with privilege separation, its user needs it too). ",
			priv, path, priv, path)
	}
	return msg + "This call needs " + e.Needs
}

// Unwrap returns ErrPermissionDenied and the API error.
func (e *PermissionError) Unwrap() []error { return []error{ErrPermissionDenied, e.Err} }

var permCheckRe = regexp.MustCompile(`Permission check failed \((/[^,()]*), ([A-Za-z][A-Za-z.]*)\)`)

// ParsePermissionCheck reads PVE's "Permission check failed (PATH, PRIV)"
// and returns the ACL path and the privilege; ok is false for any other
// text, including the bare "Permission check failed".
func ParsePermissionCheck(msg string) (path, priv string, ok bool) {
	m := permCheckRe.FindStringSubmatch(msg)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}
