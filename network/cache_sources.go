package network

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
)

// Target receives what a Feed or Watch saw; *Cache is one.
type Target interface {
	Observe(obj client.Object)
	Forget(obj client.Object)
}

// Feed returns interceptor hooks that record every successful write made
// through the client they wrap in t, the way an informer without lag would:
// the written object after create, update and patch, and after a delete
// either the object left Terminating or its absence. Wrap the client every
// actor writes with (as a simulator does) and the cache is always current;
// wrap only the controller's client and the cache knows only the
// controller's writes, like a stale informer.
func Feed(t Target) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			t.Observe(obj)
			return nil
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := c.Update(ctx, obj, opts...); err != nil {
				return err
			}
			written(t, obj)
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := c.Patch(ctx, obj, p, opts...); err != nil {
				return err
			}
			written(t, obj)
			return nil
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := c.Delete(ctx, obj, opts...); err != nil {
				return err
			}
			refresh(ctx, c, t, obj)
			return nil
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
				return err
			}
			t.Observe(obj)
			return nil
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := c.SubResource(sub).Patch(ctx, obj, p, opts...); err != nil {
				return err
			}
			t.Observe(obj)
			return nil
		},
	}
}

// written records obj as an update or patch returned it: a deleted object
// whose last finalizer went is gone.
func written(t Target, obj client.Object) {
	if !obj.GetDeletionTimestamp().IsZero() && len(obj.GetFinalizers()) == 0 {
		t.Forget(obj)
		return
	}
	t.Observe(obj)
}

// refresh reads obj back after a write that may have removed it (a delete,
// or an update that cleared the last finalizer of a deleted object).
func refresh(ctx context.Context, c client.Reader, t Target, obj client.Object) {
	cur, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return
	}
	if u, isU := obj.(*unstructured.Unstructured); isU {
		cur = &unstructured.Unstructured{}
		cur.GetObjectKind().SetGroupVersionKind(u.GroupVersionKind())
	}
	switch err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); {
	case err == nil:
		t.Observe(cur)
	case apierrors.IsNotFound(err):
		t.Forget(obj)
	}
}

// Watch adds a handler to the informer of each example object's kind in src
// that records adds, updates and deletes in t: how a controller process
// keeps its Cache current. Pass one example per kind the cache indexes or
// maps to keys: ProxmoxNetwork, ProxmoxNetworkZone, Vlan, ProxmoxVLANClaim,
// Subnet, ProviderNetwork, InClusterIPPool, IPAddress, Namespace and an
// unstructured ProxmoxMachine per served version.
func Watch(ctx context.Context, src engine.Informers, t Target, examples ...client.Object) error {
	for _, ex := range examples {
		inf, err := src.GetInformer(ctx, ex)
		if err != nil {
			return err
		}
		unwrap := func(o any) (client.Object, bool) {
			if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = tomb.Obj
			}
			co, ok := o.(client.Object)
			return co, ok
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) {
				if co, ok := unwrap(o); ok {
					t.Observe(co)
				}
			},
			UpdateFunc: func(_, o any) {
				if co, ok := unwrap(o); ok {
					t.Observe(co)
				}
			},
			DeleteFunc: func(o any) {
				if co, ok := unwrap(o); ok {
					t.Forget(co)
				}
			},
		}); err != nil {
			return err
		}
	}
	return nil
}
