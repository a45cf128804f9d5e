package network

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/enginetest"
)

// TestNamespaceStep: the namespace runner's step lists the entries of the
// namespace's networks in its annotation, drops an annotation no network
// backs, and writes nothing when the annotation is what the networks say
// or when there is no network and no annotation.
func TestNamespaceStep(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	namespace := func(annotation ...string) *corev1.Namespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}
		if len(annotation) > 0 {
			ns.Annotations = map[string]string{v1alpha1.AnnotationNamespaceNetworks: annotation[0]}
		}
		return ns
	}
	held := &v1alpha1.ProxmoxNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "net-a"},
		Spec:   v1alpha1.ProxmoxNetworkSpec{Zone: "zone-a", Subnet: "subnet-a", IPPool: "pool-a"},
		Status: v1alpha1.ProxmoxNetworkStatus{VLAN: 100, Bridge: "vmbr0"}}
	annotated := func(want string) func(*testing.T, client.Client) {
		return func(t *testing.T, c client.Client) {
			t.Helper()
			ns := &corev1.Namespace{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: "tenant-a"}, ns); err != nil {
				t.Fatal(err)
			}
			if got, ok := ns.Annotations[v1alpha1.AnnotationNamespaceNetworks]; got != want || ok != (want != "") {
				t.Errorf("annotation %q (set: %t), want %q", got, ok, want)
			}
		}
	}
	patched := []enginetest.Write{{Verb: "patch", Kind: "Namespace", Key: client.ObjectKey{Name: "tenant-a"}}}
	enginetest.StepTest[*corev1.Namespace]{
		Scheme:             s,
		StatusSubresources: []client.Object{&v1alpha1.ProxmoxNetwork{}},
		New: func(t *testing.T, r enginetest.Rig) engine.Step[*corev1.Namespace] {
			c, err := New(Config{Client: r.Client, Resync: -1, Recorder: r.Recorder})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			return engine.StepFunc[*corev1.Namespace](c.reconcileNamespace)
		},
		Cases: map[string]enginetest.StepCase[*corev1.Namespace]{
			"Lists": {Given: []client.Object{namespace(), held}, Object: namespace(),
				ExpectWrites: patched, Verify: annotated("vmbr0/100/pool-a")},
			"DropsStale": {Given: []client.Object{namespace("vmbr0/101/gone")}, Object: namespace(),
				ExpectWrites: patched, Verify: annotated("")},
			"UpToDate": {Given: []client.Object{namespace("vmbr0/100/pool-a"), held}, Object: namespace(),
				Verify: annotated("vmbr0/100/pool-a")},
			"Nothing": {Given: []client.Object{namespace()}, Object: namespace()},
		},
	}.Run(t)
}
