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
	fail    []error
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
func (r *Reserver) FailNext(errs ...error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = append(r.fail, errs...)
}

func (r *Reserver) injected() error {
	if len(r.fail) == 0 {
		return nil
	}
	err := r.fail[0]
	r.fail = r.fail[1:]
	return err
}

// Reserve records res unless another network holds res.VID on provider.
func (r *Reserver) Reserve(_ context.Context, provider string, res vlanalloc.Reservation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.injected(); err != nil {
		return err
	}
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
	if err := r.injected(); err != nil {
		return err
	}
	k := key{provider, res.VID}
	if cur, ok := r.records[k]; ok && cur.Network == res.Network {
		delete(r.records, k)
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
