package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Requests counts the API calls made through the clients it wraps, by verb
// and kind, the way an API server's request metrics would. It is safe for
// concurrent use.
type Requests struct {
	mu     sync.Mutex
	counts map[RequestKey]int
}

// RequestKey is one verb on one kind ("ProxmoxNetwork", "Vlan"...); list
// calls count under the kind of their items.
type RequestKey struct {
	Verb Verb
	Kind string
}

// NewRequests returns a counter with nothing counted.
func NewRequests() *Requests { return &Requests{counts: map[RequestKey]int{}} }

func (r *Requests) add(c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[RequestKey{Verb: c.Verb, Kind: c.GVK.Kind}]++
}

// Counts returns a copy of the counts so far.
func (r *Requests) Counts() map[RequestKey]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.counts)
}

// Reset forgets every count.
func (r *Requests) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.counts)
}

// IsWrite reports whether v changes the store: create, update, patch,
// delete, deletecollection and their subresource forms.
func IsWrite(v Verb) bool {
	base, _, _ := strings.Cut(string(v), "/")
	switch Verb(base) {
	case VerbCreate, VerbUpdate, VerbPatch, VerbDelete, VerbDeleteAllOf:
		return true
	}
	return false
}

// Writes returns how many calls so far changed the store.
func (r *Requests) Writes() int {
	n := 0
	for k, c := range r.Counts() {
		if IsWrite(k.Verb) {
			n += c
		}
	}
	return n
}

// Table prints the counts, one "verb kind count" line each, sorted by verb
// then kind.
func (r *Requests) Table() string {
	counts := r.Counts()
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b RequestKey) int {
		return strings.Compare(string(a.Verb)+" "+a.Kind, string(b.Verb)+" "+b.Kind)
	})
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%-14s %-22s %d\n", k.Verb, k.Kind, counts[k])
	}
	return sb.String()
}

// Funcs returns interceptor hooks that count every call of the client they
// wrap, failed ones included, and pass it on.
func (r *Requests) Funcs() interceptor.Funcs {
	counted := func(c Call, do func() error) error { r.add(c); return do() }
	one := func(res kindResolver, verb Verb, obj client.Object, do func() error) error {
		gvk, _ := res.GroupVersionKindFor(obj)
		return counted(Call{Verb: verb, GVK: gvk}, do)
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return one(c, VerbGet, obj, func() error { return c.Get(ctx, key, obj, opts...) })
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return counted(listCall(c, VerbList, list), func() error { return c.List(ctx, list, opts...) })
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return one(c, VerbCreate, obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return one(c, VerbUpdate, obj, func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return one(c, VerbPatch, obj, func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return one(c, VerbDelete, obj, func() error { return c.Delete(ctx, obj, opts...) })
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			return one(c, VerbDeleteAllOf, obj, func() error { return c.DeleteAllOf(ctx, obj, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return one(c, Verb("update/"+sub), obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return one(c, Verb("patch/"+sub), obj, func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
	}
}
