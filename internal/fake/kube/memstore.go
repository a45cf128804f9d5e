package kube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// memStore keeps objects of the kinds the scheme has Go types for as typed
// objects in memory and answers every call on them itself, with the
// semantics of controller-runtime's fake client: a resourceVersion per
// object that every write bumps, Conflict on a stale one, finalizers that
// hold a deleted object with its deletionTimestamp until the last one goes,
// status subresources that Update and Patch leave alone and Status() writes
// alone, delete preconditions, merge, JSON and strategic merge patches,
// label and namespace selection, and watch events. A get or a list costs a
// DeepCopy, a write a DeepCopy (and a patch one JSON encoding and decoding
// of the object). Unstructured objects of those kinds are converted;
// everything else (kinds without a Go type, partial metadata, field
// selectors, paged lists, server-side apply) goes to the fake client below.
// Owner references are not garbage collected, as on a bare kube-apiserver.
type memStore struct {
	client.WithWatch
	scheme     *runtime.Scheme
	withStatus map[schema.GroupVersionKind]bool

	mu       sync.RWMutex
	objs     map[schema.GroupVersionKind]map[client.ObjectKey]client.Object
	slabs    map[schema.GroupVersionKind]reflect.Value
	watchers []*memWatcher
}

func newMemStore(fake client.WithWatch, s *runtime.Scheme, withStatus []client.Object) (*memStore, error) {
	m := &memStore{WithWatch: fake, scheme: s, withStatus: map[schema.GroupVersionKind]bool{},
		objs: map[schema.GroupVersionKind]map[client.ObjectKey]client.Object{}, slabs: map[schema.GroupVersionKind]reflect.Value{}}
	for _, o := range withStatus {
		gvk, ok := m.typedKind(o)
		if !ok {
			return nil, fmt.Errorf("cannot keep %T in memory: the scheme has no Go type for it", o)
		}
		m.withStatus[gvk] = true
	}
	for _, gvk := range inTreeWithStatus {
		m.withStatus[gvk] = true
	}
	return m, nil
}

// inTreeWithStatus are the core kinds with a status subresource that the
// simulations and tests write.
var inTreeWithStatus = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "Node"}, {Version: "v1", Kind: "Namespace"},
	{Version: "v1", Kind: "Service"}, {Version: "v1", Kind: "PersistentVolumeClaim"},
}

// typedKind returns the kind of a typed object; ok is false for
// unstructured objects, partial metadata and types the scheme does not know.
func (m *memStore) typedKind(obj runtime.Object) (schema.GroupVersionKind, bool) {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return schema.GroupVersionKind{}, false
	}
	gvks, _, err := m.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, false
	}
	return gvks[0], true
}

// typed returns obj as a typed object of its kind: obj itself, or a new
// typed object converted from an unstructured one whose kind has a Go
// type. ok is false when the store does not keep the kind.
func (m *memStore) typed(obj client.Object) (client.Object, schema.GroupVersionKind, bool, error) {
	if gvk, ok := m.typedKind(obj); ok {
		return obj, gvk, true, nil
	}
	u, isU := obj.(*unstructured.Unstructured)
	if !isU {
		return nil, schema.GroupVersionKind{}, false, nil
	}
	gvk := u.GroupVersionKind()
	t, ok := m.newTyped(gvk)
	if !ok {
		return nil, gvk, false, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
		return nil, gvk, false, fmt.Errorf("cannot convert %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	return t, gvk, true, nil
}

// newTyped returns a new typed object of gvk, if the scheme has a Go type.
func (m *memStore) newTyped(gvk schema.GroupVersionKind) (client.Object, bool) {
	if !m.scheme.Recognizes(gvk) {
		return nil, false
	}
	o, err := m.scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	if _, isU := o.(runtime.Unstructured); isU {
		return nil, false
	}
	co, ok := o.(client.Object)
	return co, ok
}

// copyOut writes stored into out, which is either a typed object of the
// same Go type or an unstructured one.
func copyOut(stored client.Object, gvk schema.GroupVersionKind, out client.Object) error {
	if p, isP := out.(*metav1.PartialObjectMetadata); isP {
		om, _ := reflect.ValueOf(stored).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta)
		p.ObjectMeta = *om.DeepCopy()
		p.SetGroupVersionKind(gvk)
		return nil
	}
	if u, isU := out.(*unstructured.Unstructured); isU {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(stored)
		if err != nil {
			return err
		}
		u.Object = content
		u.SetGroupVersionKind(gvk)
		return nil
	}
	reflect.ValueOf(out).Elem().Set(reflect.ValueOf(stored.DeepCopyObject()).Elem())
	return nil
}

func resourceOf(gvk schema.GroupVersionKind) schema.GroupResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}

// Get implements client.Reader.
func (m *memStore) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, ok := m.typedKind(obj)
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		gvk = o.GroupVersionKind()
		_, ok = m.newTyped(gvk)
	case *metav1.PartialObjectMetadata:
		gvk = o.GroupVersionKind()
		_, ok = m.newTyped(gvk)
	}
	if !ok || len(opts) > 0 {
		return m.WithWatch.Get(ctx, key, obj, opts...)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	stored, found := m.objs[gvk][key]
	if !found {
		return apierrors.NewNotFound(resourceOf(gvk), key.Name)
	}
	return copyOut(stored, gvk, obj)
}

// List implements client.Reader.
func (m *memStore) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	gvk, ok := m.listKind(list)
	if !ok || lo.FieldSelector != nil {
		return m.WithWatch.List(ctx, list, opts...)
	}
	after, err := decodeContinue(lo.Continue)
	if err != nil {
		return err
	}
	m.mu.RLock()
	var keys []client.ObjectKey
	for k, o := range m.objs[gvk] {
		if (after == nil || compareKeys(k, *after) > 0) && m.selects(lo.Namespace, lo.LabelSelector, k, o) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	next := ""
	if lo.Limit > 0 && int64(len(keys)) > lo.Limit {
		keys = keys[:lo.Limit]
		next = encodeContinue(keys[len(keys)-1])
	}
	stored := make([]client.Object, len(keys))
	for i, k := range keys {
		stored[i] = m.objs[gvk][k]
	}
	err = fillList(list, gvk, stored)
	m.mu.RUnlock()
	if err != nil {
		return err
	}
	if next != "" {
		acc, err := meta.ListAccessor(list)
		if err != nil {
			return err
		}
		acc.SetContinue(next)
	}
	return nil
}

// encodeContinue is the continue token of a page that ends at last. Later
// pages see the store as it is when they are asked for, where the API
// server serves every page from the first page's snapshot; the callers
// here do not create or delete objects of the kind between pages.
func encodeContinue(last client.ObjectKey) string {
	return base64.RawURLEncoding.EncodeToString([]byte(last.Namespace + "/" + last.Name))
}

// decodeContinue is the key a continue token resumes after; nil for none.
func decodeContinue(token string) (*client.ObjectKey, error) {
	if token == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	ns, name, found := strings.Cut(string(raw), "/")
	if err != nil || !found || name == "" {
		return nil, apierrors.NewBadRequest("continue key is not valid: " + token)
	}
	return &client.ObjectKey{Namespace: ns, Name: name}, nil
}

// fillList sets list's items to copies of stored, which are of kind gvk.
func fillList(list client.ObjectList, gvk schema.GroupVersionKind, stored []client.Object) error {
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		l.Items = make([]unstructured.Unstructured, len(stored))
		for i, o := range stored {
			if err := copyOut(o, gvk, &l.Items[i]); err != nil {
				return err
			}
		}
		return nil
	case *metav1.PartialObjectMetadataList:
		l.Items = make([]metav1.PartialObjectMetadata, len(stored))
		for i, o := range stored {
			if err := copyOut(o, gvk, &l.Items[i]); err != nil {
				return err
			}
		}
		return nil
	}
	items := make([]runtime.Object, len(stored))
	for i, o := range stored {
		items[i] = o.DeepCopyObject()
	}
	return meta.SetList(list, items)
}

// listKind is the item kind of a list the store answers.
func (m *memStore) listKind(list client.ObjectList) (schema.GroupVersionKind, bool) {
	var lk schema.GroupVersionKind
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		lk = l.GroupVersionKind()
	case *metav1.PartialObjectMetadataList:
		lk = l.GroupVersionKind()
	default:
		var ok bool
		if lk, ok = m.typedKind(list); !ok {
			return lk, false
		}
	}
	if !strings.HasSuffix(lk.Kind, "List") {
		return lk, false
	}
	gvk := lk.GroupVersion().WithKind(strings.TrimSuffix(lk.Kind, "List"))
	_, ok := m.newTyped(gvk)
	return gvk, ok
}

func (m *memStore) selects(ns string, sel labels.Selector, k client.ObjectKey, o client.Object) bool {
	return (ns == "" || k.Namespace == ns) && (sel == nil || sel.Matches(labels.Set(o.GetLabels())))
}

func compareKeys(a, b client.ObjectKey) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// nextVersion is the resourceVersion after cur's.
func nextVersion(cur client.Object) string {
	n, _ := strconv.ParseUint(cur.GetResourceVersion(), 10, 64)
	return strconv.FormatUint(n+1, 10)
}

// Create implements client.Writer.
func (m *memStore) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	t, gvk, ok, err := m.typed(obj)
	if err != nil || !ok {
		if err != nil {
			return err
		}
		return m.WithWatch.Create(ctx, obj, opts...)
	}
	co := (&client.CreateOptions{}).ApplyOptions(opts)
	if len(co.DryRun) > 0 {
		return nil
	}
	if t.GetResourceVersion() != "" {
		return apierrors.NewBadRequest("resourceVersion can not be set for Create requests")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.GetName() == "" && t.GetGenerateName() != "" {
		for i := len(m.objs[gvk]) + 1; t.GetName() == ""; i++ {
			if _, taken := m.objs[gvk][client.ObjectKey{Namespace: t.GetNamespace(), Name: t.GetGenerateName() + strconv.Itoa(i)}]; !taken {
				t.SetName(t.GetGenerateName() + strconv.Itoa(i))
			}
		}
	}
	if t.GetName() == "" {
		return apierrors.NewBadRequest("name is required")
	}
	key := client.ObjectKeyFromObject(t)
	if _, exists := m.objs[gvk][key]; exists {
		return apierrors.NewAlreadyExists(resourceOf(gvk), key.Name)
	}
	stored := m.place(gvk, t.DeepCopyObject())
	stored.SetResourceVersion("1")
	stored.SetDeletionTimestamp(nil)
	stored.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	m.put(gvk, key, stored, watch.Added)
	return copyOut(stored, gvk, obj)
}

// slabSize is how many objects of a kind the store allocates at once.
const slabSize = 64

// place moves o (a fresh copy) into the next free object of its kind's
// slab and returns that object. The store's objects outlive the garbage
// every request makes; allocated a chunk at a time they sit together in
// memory instead of one by one among that garbage, which would hold a
// span of the heap for each. Callers hold m.mu.
func (m *memStore) place(gvk schema.GroupVersionKind, o runtime.Object) client.Object {
	v := reflect.ValueOf(o)
	slab, ok := m.slabs[gvk]
	if !ok || slab.Len() == 0 {
		slab = reflect.MakeSlice(reflect.SliceOf(v.Type().Elem()), slabSize, slabSize)
	}
	slot := slab.Index(0).Addr()
	m.slabs[gvk] = slab.Slice(1, slab.Len())
	slot.Elem().Set(v.Elem())
	placed, _ := slot.Interface().(client.Object)
	return placed
}

// seed stores obj as the fake client stores the objects it is built with
// (resourceVersion 999).
func (m *memStore) seed(obj client.Object) error {
	t, gvk, ok, err := m.typed(obj)
	if err != nil || !ok {
		if err != nil {
			return err
		}
		return m.WithWatch.Create(context.Background(), obj)
	}
	stored, _ := t.DeepCopyObject().(client.Object)
	stored.SetResourceVersion("999")
	stored.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.put(gvk, client.ObjectKeyFromObject(stored), stored, watch.Added)
	return nil
}

// put stores o and tells the watchers. Callers hold m.mu.
func (m *memStore) put(gvk schema.GroupVersionKind, key client.ObjectKey, o client.Object, ev watch.EventType) {
	kind := m.objs[gvk]
	if kind == nil {
		kind = map[client.ObjectKey]client.Object{}
		m.objs[gvk] = kind
	}
	kind[key] = o
	m.notify(gvk, ev, o)
}

// remove drops the object and tells the watchers. Callers hold m.mu.
func (m *memStore) remove(gvk schema.GroupVersionKind, key client.ObjectKey, last client.Object) {
	delete(m.objs[gvk], key)
	m.notify(gvk, watch.Deleted, last)
}

// Update implements client.Writer.
func (m *memStore) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	t, gvk, ok, err := m.typed(obj)
	if err != nil || !ok {
		if err != nil {
			return err
		}
		return m.WithWatch.Update(ctx, obj, opts...)
	}
	if len((&client.UpdateOptions{}).ApplyOptions(opts).DryRun) > 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.update(gvk, t, obj, false)
}

// update stores t over the current object: the main resource (status
// kept for kinds with a status subresource) or, with status, only the
// status. out receives the stored object. Callers hold m.mu.
func (m *memStore) update(gvk schema.GroupVersionKind, t, out client.Object, status bool) error {
	key := client.ObjectKeyFromObject(t)
	cur, found := m.objs[gvk][key]
	if !found {
		return apierrors.NewNotFound(resourceOf(gvk), key.Name)
	}
	if rv := t.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
		return apierrors.NewConflict(resourceOf(gvk), key.Name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	next, _ := t.DeepCopyObject().(client.Object)
	switch {
	case status:
		next, _ = cur.DeepCopyObject().(client.Object)
		setStatus(next, statusOf(t))
	case m.withStatus[gvk]:
		setStatus(next, statusOf(cur))
	}
	next.SetUID(cur.GetUID())
	next.SetCreationTimestamp(cur.GetCreationTimestamp())
	next.SetDeletionTimestamp(cur.GetDeletionTimestamp())
	next.SetResourceVersion(nextVersion(cur))
	next.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	if next.GetDeletionTimestamp() != nil && len(next.GetFinalizers()) == 0 {
		m.remove(gvk, key, next)
		return copyOut(next, gvk, out)
	}
	// Stored objects never leave the store (reads copy them under the
	// lock), so the new version takes the place of the old one: an object
	// written many times keeps the memory it was created in instead of
	// scattering its last version among the garbage of every write.
	reflect.ValueOf(cur).Elem().Set(reflect.ValueOf(next).Elem())
	m.put(gvk, key, cur, watch.Modified)
	return copyOut(cur, gvk, out)
}

func statusOf(o client.Object) reflect.Value {
	v := reflect.ValueOf(o).Elem().FieldByName("Status")
	return v
}

func setStatus(o client.Object, status reflect.Value) {
	if !status.IsValid() {
		return
	}
	f := reflect.ValueOf(o).Elem().FieldByName("Status")
	if f.IsValid() && f.CanSet() {
		f.Set(status)
	}
}

// Patch implements client.Writer.
func (m *memStore) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return m.patch(ctx, obj, patch, false, func() error { return m.WithWatch.Patch(ctx, obj, patch, opts...) })
}

// patch applies patch to the stored object (its status alone, with status)
// and stores the result as update does.
func (m *memStore) patch(_ context.Context, obj client.Object, patch client.Patch, status bool, fallback func() error) error {
	t, gvk, ok, err := m.typed(obj)
	if err != nil {
		return err
	}
	if !ok || patch.Type() == types.ApplyPatchType || patch.Type() == types.ApplyCBORPatchType {
		return fallback()
	}
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, found := m.objs[gvk][key]
	if !found {
		return apierrors.NewNotFound(resourceOf(gvk), key.Name)
	}
	curJSON, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	var patched []byte
	switch patch.Type() {
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(curJSON, data)
	case types.JSONPatchType:
		p, derr := jsonpatch.DecodePatch(data)
		if derr != nil {
			return apierrors.NewBadRequest(derr.Error())
		}
		if patched, err = p.Apply(curJSON); err != nil {
			// The API server's answer to a patch that does not apply (a
			// failed test among them): 422 with the library's message as
			// the cause.
			return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(curJSON, data, cur)
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("patch type %s is not supported", patch.Type()))
	}
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("cannot apply the patch: %v", err))
	}
	next, _ := m.newTyped(gvk)
	if err := json.Unmarshal(patched, next); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the patched object does not decode: %v", err))
	}
	if next.GetResourceVersion() == "" {
		next.SetResourceVersion(cur.GetResourceVersion())
	}
	return m.update(gvk, next, obj, status)
}

// Delete implements client.Writer.
func (m *memStore) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	t, gvk, ok, err := m.typed(obj)
	if err != nil || !ok {
		if err != nil {
			return err
		}
		return m.WithWatch.Delete(ctx, obj, opts...)
	}
	do := (&client.DeleteOptions{}).ApplyOptions(opts)
	if len(do.DryRun) > 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.delete(gvk, client.ObjectKeyFromObject(t), do.Preconditions)
}

// delete deletes one object. Callers hold m.mu.
func (m *memStore) delete(gvk schema.GroupVersionKind, key client.ObjectKey, pre *metav1.Preconditions) error {
	cur, found := m.objs[gvk][key]
	if !found {
		return apierrors.NewNotFound(resourceOf(gvk), key.Name)
	}
	if pre != nil && ((pre.UID != nil && *pre.UID != cur.GetUID()) || (pre.ResourceVersion != nil && *pre.ResourceVersion != cur.GetResourceVersion())) {
		return apierrors.NewConflict(resourceOf(gvk), key.Name, fmt.Errorf("the precondition of the delete does not hold"))
	}
	if len(cur.GetFinalizers()) == 0 {
		m.remove(gvk, key, cur)
		return nil
	}
	if cur.GetDeletionTimestamp() != nil {
		return nil
	}
	next, _ := cur.DeepCopyObject().(client.Object)
	now := metav1.Now()
	next.SetDeletionTimestamp(&now)
	next.SetResourceVersion(nextVersion(cur))
	m.put(gvk, key, next, watch.Modified)
	return nil
}

// DeleteAllOf implements client.Writer.
func (m *memStore) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	_, gvk, ok, err := m.typed(obj)
	if err != nil || !ok {
		if err != nil {
			return err
		}
		return m.WithWatch.DeleteAllOf(ctx, obj, opts...)
	}
	do := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	if do.FieldSelector != nil {
		return m.WithWatch.DeleteAllOf(ctx, obj, opts...)
	}
	if len(do.DryRun) > 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []client.ObjectKey
	for k, o := range m.objs[gvk] {
		if m.selects(do.Namespace, do.LabelSelector, k, o) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		if err := m.delete(gvk, k, do.Preconditions); err != nil {
			return err
		}
	}
	return nil
}

// Status implements client.StatusClient.
func (m *memStore) Status() client.SubResourceWriter { return m.SubResource("status") }

// SubResource implements client.SubResourceClientConstructor.
func (m *memStore) SubResource(sub string) client.SubResourceClient {
	return memSub{SubResourceClient: m.WithWatch.SubResource(sub), m: m, status: sub == "status"}
}

// memSub writes the status subresource of kept kinds; other subresources
// go to the fake client.
type memSub struct {
	client.SubResourceClient
	m      *memStore
	status bool
}

func (s memSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	t, gvk, ok, err := s.m.typed(obj)
	if err != nil {
		return err
	}
	if !s.status || !ok {
		return s.SubResourceClient.Update(ctx, obj, opts...)
	}
	if !s.m.withStatus[gvk] {
		return apierrors.NewNotFound(resourceOf(gvk), obj.GetName())
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.m.update(gvk, t, obj, true)
}

func (s memSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if !s.status {
		return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
	}
	return s.m.patch(ctx, obj, patch, true, func() error { return s.SubResourceClient.Patch(ctx, obj, patch, opts...) })
}

// Watch implements client.WithWatch.
func (m *memStore) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	gvk, ok := m.listKind(list)
	if _, isP := list.(*metav1.PartialObjectMetadataList); isP && ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the in-memory API does not watch %s as metadata only; watch the typed list", gvk.Kind))
	}
	if !ok || lo.FieldSelector != nil {
		return m.WithWatch.Watch(ctx, list, opts...)
	}
	_, unstructuredItems := list.(*unstructured.UnstructuredList)
	w := newMemWatcher(gvk, lo.Namespace, lo.LabelSelector, unstructuredItems)
	m.mu.Lock()
	m.watchers = append(m.watchers, w)
	m.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			w.Stop()
		case <-w.done:
		}
		m.mu.Lock()
		m.watchers = slices.DeleteFunc(m.watchers, func(x *memWatcher) bool { return x == w })
		m.mu.Unlock()
	}()
	return w, nil
}

// notify queues an event for every watcher of gvk that selects o. Callers
// hold m.mu.
func (m *memStore) notify(gvk schema.GroupVersionKind, ev watch.EventType, o client.Object) {
	for _, w := range m.watchers {
		if w.gvk == gvk && m.selects(w.ns, w.sel, client.ObjectKeyFromObject(o), o) {
			out := o.DeepCopyObject()
			if w.unstructured {
				u := &unstructured.Unstructured{}
				if err := copyOut(o, gvk, u); err == nil {
					out = u
				}
			}
			w.push(watch.Event{Type: ev, Object: out})
		}
	}
}

// memWatcher delivers events in order through an unbounded queue, so a
// write never waits for a slow reader.
type memWatcher struct {
	gvk          schema.GroupVersionKind
	ns           string
	sel          labels.Selector
	unstructured bool

	mu    sync.Mutex
	queue []watch.Event
	wake  chan struct{}
	out   chan watch.Event
	done  chan struct{}
	once  sync.Once
}

func newMemWatcher(gvk schema.GroupVersionKind, ns string, sel labels.Selector, unstructuredItems bool) *memWatcher {
	w := &memWatcher{gvk: gvk, ns: ns, sel: sel, unstructured: unstructuredItems,
		wake: make(chan struct{}, 1), out: make(chan watch.Event), done: make(chan struct{})}
	go w.pump()
	return w
}

func (w *memWatcher) push(e watch.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, e)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *memWatcher) pump() {
	defer close(w.out)
	for {
		w.mu.Lock()
		q := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, e := range q {
			select {
			case w.out <- e:
			case <-w.done:
				return
			}
		}
		select {
		case <-w.wake:
		case <-w.done:
			return
		}
	}
}

// Stop implements watch.Interface.
func (w *memWatcher) Stop() { w.once.Do(func() { close(w.done) }) }

// ResultChan implements watch.Interface.
func (w *memWatcher) ResultChan() <-chan watch.Event { return w.out }
