package engine

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Informers is the part of a controller-runtime cache.Cache that Watch uses.
type Informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// Enqueuer takes keys to reconcile; a *Runner is one.
type Enqueuer interface {
	Enqueue(key Key)
}

// MapFunc maps an object an informer saw to the keys to reconcile, e.g. a
// Node to the networks whose gateway may use it.
type MapFunc func(obj client.Object) []Key

// Watch adds an event handler to the informer of obj's kind in src: each
// add, update (old and new object) and delete enqueues on q the keys mapFn
// returns; a nil mapFn enqueues the object's own key. Events are hints: the
// runner reads the object again and its resync covers missed events. Remove
// the handler through the returned registration when it is no longer needed.
func Watch(ctx context.Context, src Informers, obj client.Object, q Enqueuer, mapFn MapFunc) (toolscache.ResourceEventHandlerRegistration, error) {
	inf, err := src.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("cannot get an informer for %T: %w", obj, err)
	}
	if mapFn == nil {
		mapFn = func(o client.Object) []Key { return []Key{client.ObjectKeyFromObject(o)} }
	}
	enqueue := func(o any) {
		if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = tomb.Obj
		}
		co, ok := o.(client.Object)
		if !ok {
			return
		}
		for _, k := range mapFn(co) {
			q.Enqueue(k)
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(oldObj, newObj any) { enqueue(oldObj); enqueue(newObj) },
		DeleteFunc: enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot add an event handler for %T: %w", obj, err)
	}
	return reg, nil
}
