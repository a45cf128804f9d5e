package vlanalloctest

import (
	"context"
	"sort"
	"sync"

	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// Reserver is an in-memory vlanalloc.Reserver. Its zero value is not usable;
// call NewReserver.
type Reserver struct {
	mu      sync.Mutex
	records map[key]vlanalloc.Reservation
	fail    []injection
}

// injection is an error the next call returns; applied says whether the
// call changes the records first, as a request whose answer was lost.
type injection struct {
	err     error
	applied bool
}

type key struct {
	provider string
	vid      int
}

var _ vlanalloc.Reserver = (*Reserver)(nil)

// NewReserver returns an empty Reserver.
func NewReserver() *Reserver { return &Reserver{records: map[key]vlanalloc.Reservation{}} }

// FailNext makes the next calls (Reserve or Release), one per error, fail
// with these errors without changing any record.
func (r *Reserver) FailNext(errs ...error) { r.inject(false, errs) }

// LoseNext makes the next calls (Reserve or Release), one per error, change
// the records as usual and then fail with these errors: the write happened
// but its answer was lost, as with a timeout after commit.
func (r *Reserver) LoseNext(errs ...error) { r.inject(true, errs) }

func (r *Reserver) inject(applied bool, errs []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, err := range errs {
		r.fail = append(r.fail, injection{err: err, applied: applied})
	}
}

// ClearFaults drops the injected errors no call has taken yet.
func (r *Reserver) ClearFaults() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = nil
}

// next pops the injection of this call; ok is false when there is none.
func (r *Reserver) next() (injection, bool) {
	if len(r.fail) == 0 {
		return injection{}, false
	}
	in := r.fail[0]
	r.fail = r.fail[1:]
	return in, true
}

// Reserve records res unless another network holds res.VID on provider.
func (r *Reserver) Reserve(_ context.Context, provider string, res vlanalloc.Reservation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	in, injected := r.next()
	if injected && !in.applied {
		return in.err
	}
	err := r.reserve(provider, res)
	if injected {
		return in.err
	}
	return err
}

func (r *Reserver) reserve(provider string, res vlanalloc.Reservation) error {
	k := key{provider, res.VID}
	if cur, ok := r.records[k]; ok {
		if cur.Network == res.Network {
			return nil
		}
		return &vlanalloc.TakenError{Provider: provider, Holder: cur}
	}
	r.records[k] = res
	return nil
}

// Release deletes the record of res.VID on provider if it names res.Network.
func (r *Reserver) Release(_ context.Context, provider string, res vlanalloc.Reservation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	in, injected := r.next()
	if injected && !in.applied {
		return in.err
	}
	k := key{provider, res.VID}
	if cur, ok := r.records[k]; ok && cur.Network == res.Network {
		delete(r.records, k)
	}
	if injected {
		return in.err
	}
	return nil
}

// Records returns the records of provider ordered by ID.
func (r *Reserver) Records(provider string) []vlanalloc.Reservation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []vlanalloc.Reservation
	for k, v := range r.records {
		if k.provider == provider {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VID < out[j].VID })
	return out
}
