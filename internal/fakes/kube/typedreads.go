package kube

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typedReads serves Get and List of typed objects from deep copies kept in
// memory, and passes every write to the fake client below, which keeps the
// API's semantics: resourceVersion conflicts, finalizers and
// deletionTimestamp, status subresources, preconditions, merge patches and
// watch events. After each write the written object is read back from the
// fake once and kept, so a read costs a map lookup and a DeepCopy instead
// of the fake's JSON round trip. Unstructured objects, partial metadata,
// field selectors and paged lists go to the fake. Writes are serialized, so
// the kept copy of an object is always its last written state.
type typedReads struct {
	client.WithWatch
	scheme *runtime.Scheme
	// wmu serializes a write with the read-back that records it.
	wmu  sync.Mutex
	mu   sync.RWMutex
	objs map[schema.GroupVersionKind]map[client.ObjectKey]client.Object
}

func newTypedReads(c client.WithWatch, s *runtime.Scheme) *typedReads {
	return &typedReads{WithWatch: c, scheme: s, objs: map[schema.GroupVersionKind]map[client.ObjectKey]client.Object{}}
}

// typedKind returns the kind of a typed object; ok is false for
// unstructured objects, partial metadata and types the scheme does not know.
func (s *typedReads) typedKind(obj runtime.Object) (schema.GroupVersionKind, bool) {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return schema.GroupVersionKind{}, false
	}
	gvks, _, err := s.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, false
	}
	return gvks[0], true
}

// Get implements client.Reader.
func (s *typedReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, ok := s.typedKind(obj)
	if !ok || len(opts) > 0 {
		return s.WithWatch.Get(ctx, key, obj, opts...)
	}
	s.mu.RLock()
	stored, found := s.objs[gvk][key]
	s.mu.RUnlock()
	if !found {
		return apierrors.NewNotFound(resourceOf(gvk), key.Name)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(stored.DeepCopyObject()).Elem())
	return nil
}

func resourceOf(gvk schema.GroupVersionKind) schema.GroupResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}

// List implements client.Reader.
func (s *typedReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	listKind, ok := s.typedKind(list)
	if !ok || lo.FieldSelector != nil || lo.Limit > 0 || lo.Continue != "" || !strings.HasSuffix(listKind.Kind, "List") {
		return s.WithWatch.List(ctx, list, opts...)
	}
	gvk := listKind.GroupVersion().WithKind(strings.TrimSuffix(listKind.Kind, "List"))
	s.mu.RLock()
	var keys []client.ObjectKey
	for k, o := range s.objs[gvk] {
		if (lo.Namespace == "" || k.Namespace == lo.Namespace) && (lo.LabelSelector == nil || lo.LabelSelector.Matches(labels.Set(o.GetLabels()))) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b client.ObjectKey) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	items := make([]runtime.Object, len(keys))
	for i, k := range keys {
		items[i] = s.objs[gvk][k].DeepCopyObject()
	}
	s.mu.RUnlock()
	return meta.SetList(list, items)
}

// write runs one write and records its outcome for obj.
func (s *typedReads) write(ctx context.Context, obj client.Object, do func() error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := do(); err != nil {
		return err
	}
	return s.readBack(ctx, obj)
}

// readBack reads obj's stored state from the fake and keeps it; an object
// that is gone is dropped. An unstructured object of a typed kind is read
// back as the typed object.
func (s *typedReads) readBack(ctx context.Context, obj client.Object) error {
	gvk, ok := s.typedKind(obj)
	if !ok {
		if _, isU := obj.(runtime.Unstructured); !isU {
			return nil
		}
		gvk = obj.GetObjectKind().GroupVersionKind()
		if !s.scheme.Recognizes(gvk) {
			return nil
		}
	}
	fresh, err := s.scheme.New(gvk)
	if err != nil {
		return nil //nolint:nilerr // a kind without a Go type is not kept
	}
	fo, isObj := fresh.(client.Object)
	if _, isU := fresh.(runtime.Unstructured); !isObj || isU {
		return nil
	}
	key := client.ObjectKeyFromObject(obj)
	err = s.WithWatch.Get(ctx, key, fo)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case apierrors.IsNotFound(err):
		delete(s.objs[gvk], key)
		return nil
	case err != nil:
		return err
	}
	kind := s.objs[gvk]
	if kind == nil {
		kind = map[client.ObjectKey]client.Object{}
		s.objs[gvk] = kind
	}
	kind[key] = fo
	return nil
}

// readBackKind reads every object of obj's kind back, after a write that
// may have changed any of them.
func (s *typedReads) readBackKind(ctx context.Context, obj client.Object) error {
	gvk, ok := s.typedKind(obj)
	if !ok {
		return nil
	}
	s.mu.RLock()
	var keys []client.ObjectKey
	for k := range s.objs[gvk] {
		keys = append(keys, k)
	}
	s.mu.RUnlock()
	for _, k := range keys {
		o, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			continue
		}
		o.SetNamespace(k.Namespace)
		o.SetName(k.Name)
		if err := s.readBack(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// Create implements client.Writer.
func (s *typedReads) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return s.write(ctx, obj, func() error { return s.WithWatch.Create(ctx, obj, opts...) })
}

// Update implements client.Writer.
func (s *typedReads) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return s.write(ctx, obj, func() error { return s.WithWatch.Update(ctx, obj, opts...) })
}

// Patch implements client.Writer.
func (s *typedReads) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return s.write(ctx, obj, func() error { return s.WithWatch.Patch(ctx, obj, patch, opts...) })
}

// Delete implements client.Writer.
func (s *typedReads) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return s.write(ctx, obj, func() error { return s.WithWatch.Delete(ctx, obj, opts...) })
}

// DeleteAllOf implements client.Writer.
func (s *typedReads) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.WithWatch.DeleteAllOf(ctx, obj, opts...); err != nil {
		return err
	}
	return s.readBackKind(ctx, obj)
}

// Status implements client.StatusClient.
func (s *typedReads) Status() client.SubResourceWriter { return s.SubResource("status") }

// SubResource implements client.SubResourceClientConstructor.
func (s *typedReads) SubResource(sub string) client.SubResourceClient {
	return typedSub{s: s, SubResourceClient: s.WithWatch.SubResource(sub)}
}

// typedSub records the object after each subresource write.
type typedSub struct {
	client.SubResourceClient
	s *typedReads
}

func (t typedSub) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return t.s.write(ctx, obj, func() error { return t.SubResourceClient.Create(ctx, obj, sub, opts...) })
}

func (t typedSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return t.s.write(ctx, obj, func() error { return t.SubResourceClient.Update(ctx, obj, opts...) })
}

func (t typedSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return t.s.write(ctx, obj, func() error { return t.SubResourceClient.Patch(ctx, obj, patch, opts...) })
}
