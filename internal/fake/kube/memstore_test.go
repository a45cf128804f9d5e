package kube_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

// TestTypedAgreesWithFake runs the same calls on a client with
// and on the plain fake client and compares every answer and
// every read: conflicts on a stale resourceVersion, finalizers holding a
// deleted object, the status subresource, merge patches with an optimistic
// lock, label selection, unstructured writes of typed kinds and
// deletecollection.
func TestTypedAgreesWithFake(t *testing.T) {
	run := func(typed bool) []string {
		ctx := context.Background()
		c := kube.NewClient(kube.ClientOptions{Typed: typed, WithStatus: []client.Object{&corev1.Pod{}},
			Objects: []client.Object{pod("seed", map[string]string{"app": "a"})}})
		var log []string
		note := func(what string, err error) { log = append(log, what+": "+kindOf(err)) }
		state := func(what string) {
			var pods corev1.PodList
			note(what+" list", c.List(ctx, &pods))
			for _, p := range pods.Items {
				log = append(log, fmt.Sprintf("%s %s rv=%s fin=%v del=%t phase=%s labels=%v", what, p.Name, p.ResourceVersion,
					p.Finalizers, p.DeletionTimestamp != nil, p.Status.Phase, p.Labels))
			}
			var sel corev1.PodList
			note(what+" select", c.List(ctx, &sel, client.MatchingLabels{"app": "a"}, client.InNamespace(ns)))
			log = append(log, fmt.Sprintf("%s selected %d", what, len(sel.Items)))
		}
		p := pod("p1", map[string]string{"app": "a"})
		p.Finalizers = []string{"example.com/hold"}
		note("create", c.Create(ctx, p))
		note("create again", c.Create(ctx, pod("p1", nil)))
		stale := p.DeepCopy()
		p.Labels["app"] = "b"
		note("update", c.Update(ctx, p))
		stale.Labels["app"] = "c"
		note("stale update", c.Update(ctx, stale))
		p.Status.Phase = corev1.PodRunning
		note("status update", c.Status().Update(ctx, p))
		p.Status.Phase = corev1.PodFailed
		p.Labels["app"] = "a"
		note("update ignores status", c.Update(ctx, p))
		state("after updates")
		got := &corev1.Pod{}
		note("get", c.Get(ctx, client.ObjectKeyFromObject(p), got))
		note("delete held", c.Delete(ctx, got))
		state("after delete")
		note("get held", c.Get(ctx, client.ObjectKeyFromObject(p), got))
		old := got.DeepCopy()
		got.Finalizers = nil
		note("patch stale lock", c.Patch(ctx, got, client.MergeFromWithOptions(stalePod(old), client.MergeFromWithOptimisticLock{})))
		note("patch finalizer away", c.Patch(ctx, got, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})))
		note("get released", c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}))
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Pod")
		u.SetNamespace(ns)
		u.SetName("u1")
		u.SetLabels(map[string]string{"app": "a"})
		note("unstructured create", c.Create(ctx, u))
		state("after unstructured")
		note("delete all", c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{"app": "a"}))
		state("after delete all")
		return log
	}
	if diff := cmp.Diff(run(false), run(true)); diff != "" {
		t.Errorf("calls differ (-fake +typed):\n%s", diff)
	}
}

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
}

// stalePod is p as it was one write earlier.
func stalePod(p *corev1.Pod) *corev1.Pod {
	s := p.DeepCopy()
	s.ResourceVersion = "1"
	return s
}

// TestTypedWatchAndMetadata: a watch of a kept kind sees every write that
// its namespace and labels select, in order: added, modified, the
// deletionTimestamp a finalizer holds, deleted with the resourceVersion of
// the write that removed the last finalizer. Here the store follows the
// API server rather than the fake client, whose watch ignores the label
// selector and reports the deleted object at its previous version. A
// metadata-only get and list answer with the object's metadata.
func TestTypedWatchAndMetadata(t *testing.T) {
	run := func(typed bool) []string {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := kube.NewClient(kube.ClientOptions{Typed: typed, WithStatus: []client.Object{&corev1.Pod{}}})
		w, err := c.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), client.MatchingLabels{"app": "a"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		p := pod("w1", map[string]string{"app": "a"})
		p.Finalizers = []string{"example.com/hold"}
		var log []string
		must := func(what string, err error) {
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		must("create", c.Create(ctx, p))
		must("create other", c.Create(ctx, pod("w2", map[string]string{"app": "b"})))
		p.Status.Phase = corev1.PodRunning
		must("status", c.Status().Update(ctx, p))
		must("delete", c.Delete(ctx, p))
		must("get", c.Get(ctx, client.ObjectKeyFromObject(p), p))
		old := p.DeepCopy()
		p.Finalizers = nil
		must("release", c.Patch(ctx, p, client.MergeFrom(old)))
		for done := false; !done; {
			select {
			case e := <-w.ResultChan():
				o, _ := e.Object.(*corev1.Pod)
				log = append(log, fmt.Sprintf("%s %s rv=%s phase=%s deleting=%t", e.Type, o.Name, o.ResourceVersion, o.Status.Phase, o.DeletionTimestamp != nil))
				done = e.Type == watch.Deleted
			case <-time.After(5 * time.Second):
				t.Fatalf("no Deleted event within 5 s; events: %v", log)
			}
		}
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		must("metadata get", c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w2"}, meta))
		log = append(log, fmt.Sprintf("metadata %s %s labels=%v", meta.Kind, meta.Name, meta.Labels))
		metas := &metav1.PartialObjectMetadataList{}
		metas.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		must("metadata list", c.List(ctx, metas, client.MatchingLabels{"app": "b"}))
		for _, m := range metas.Items {
			log = append(log, "listed "+m.Kind+" "+m.Name)
		}
		return log
	}
	want := []string{
		"ADDED w1 rv=1 phase= deleting=false",
		"MODIFIED w1 rv=2 phase=Running deleting=false",
		"MODIFIED w1 rv=3 phase=Running deleting=true",
		"DELETED w1 rv=4 phase=Running deleting=true",
		"metadata Pod w2 labels=map[app:b]",
		"listed Pod w2",
	}
	if diff := cmp.Diff(want, run(true)); diff != "" {
		t.Errorf("watch events and metadata (-want +got):\n%s", diff)
	}
}

// TestTypedGenerateName: objects created with only a generateName get
// distinct names with that prefix and can be read back by them.
func TestTypedGenerateName(t *testing.T) {
	ctx := context.Background()
	c := kube.NewClient(kube.ClientOptions{Typed: true})
	seen := map[string]bool{}
	for range 3 {
		p := pod("", nil)
		p.GenerateName = "gen-"
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if seen[p.Name] || len(p.Name) <= len("gen-") || p.Name[:4] != "gen-" {
			t.Fatalf("generated name %q: want a new name starting with gen- (so far %v)", p.Name, seen)
		}
		seen[p.Name] = true
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); err != nil {
			t.Fatalf("get %s: %v", p.Name, err)
		}
	}
}

// TestTypedListPages: a list with a limit answers in pages in key order,
// each with a continue token but the last, as the API server does; a
// token that is not one is a bad request. A list without a limit is the
// control: every item, no token.
func TestTypedListPages(t *testing.T) {
	ctx := context.Background()
	c := kube.NewClient(kube.ClientOptions{Typed: true})
	for _, name := range []string{"e", "b", "d", "a", "c"} {
		if err := c.Create(ctx, pod(name, nil)); err != nil {
			t.Fatal(err)
		}
	}
	var pages [][]string
	cont := ""
	for {
		var l corev1.PodList
		if err := c.List(ctx, &l, client.InNamespace(ns), client.Limit(2), client.Continue(cont)); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		pages = append(pages, names)
		if cont = l.Continue; cont == "" {
			break
		}
	}
	if diff := cmp.Diff([][]string{{"a", "b"}, {"c", "d"}, {"e"}}, pages); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	var all corev1.PodList
	if err := c.List(ctx, &all); err != nil || len(all.Items) != 5 || all.Continue != "" {
		t.Errorf("list without a limit: %d items, continue %q, err %v; want 5, none, nil", len(all.Items), all.Continue, err)
	}
	err := c.List(ctx, &corev1.PodList{}, client.Limit(2), client.Continue("not a token"))
	if !apierrors.IsBadRequest(err) {
		t.Errorf("a bad continue token: %v, want a bad request", err)
	}
}

// TestTypedReadsDuringWrites: writes replace a stored object in place, so
// every read must copy it under the store's lock. Readers list and get
// while writers update; under the race detector a copy made outside the
// lock is a reported race, and every read sees a whole version (its label
// matches its resourceVersion's writer).
func TestTypedReadsDuringWrites(t *testing.T) {
	ctx := context.Background()
	c := kube.NewClient(kube.ClientOptions{Typed: true})
	// The first version is whole too: its label and annotation agree.
	first := pod("p", map[string]string{"v": "0"})
	first.Annotations = map[string]string{"v": "0"}
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "p"}
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				p := &corev1.Pod{}
				if err := c.Get(ctx, key, p); err != nil {
					t.Error(err)
					return
				}
				if p.Labels["v"] != p.Annotations["v"] {
					t.Errorf("a read saw label %q and annotation %q: half a write", p.Labels["v"], p.Annotations["v"])
					return
				}
				var l corev1.PodList
				if err := c.List(ctx, &l); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 200 {
		p := &corev1.Pod{}
		if err := c.Get(ctx, key, p); err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprint(i)
		p.Labels = map[string]string{"v": v}
		p.Annotations = map[string]string{"v": v}
		if err := c.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	readers.Wait()
}
