package admission

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pki"
)

// Labels and finalizers the API server tests put on stored objects.
const (
	storedLabel = "test.pxsubstrate.io/stored"
	holdFinal   = "test.pxsubstrate.io/hold"
)

// apiEnv is a real kube-apiserver with the capmox CRDs (both API versions)
// and KubeVirt's VM and VMI kinds, and the validator for the same config.
type apiEnv struct {
	t   *testing.T
	c   client.Client
	v   *Validator
	cfg Config
	seq atomic.Int64
	// exempt are unused names from cfg.ExemptNamespaces.
	exempt []string
	// ready are namespaces created without annotations and shared.
	ready map[string]bool
}

// diffConfig has two zones, both in mode VNets (prefixes pxa and pxp), the platform namespaces and a pool of
// configured exempt names, each used by one generated case.
func diffConfig() Config {
	c := testConfig()
	c.Zones = append(c.Zones, Zone{Name: "public", Bridge: "vmbr80", UplinkVLAN: 80, UplinkBridges: []string{"vmbr1"}, VNetPrefix: "pxp"})
	for i := 0; i < 400; i++ {
		c.ExemptNamespaces = append(c.ExemptNamespaces, fmt.Sprintf("exempt-%d", i))
	}
	return c
}

func startAPIEnv(t *testing.T) *apiEnv {
	scheme := kube.Scheme()
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	_, c := testenv.StartAPIServer(t, testenv.APIServerOptions{Scheme: scheme, UpstreamCRDs: []string{"flux-helm-controller-api-v1.6.5"},
		CRDPaths: []string{relaxedCapmoxCRDs(t), "testdata/crds"}})
	cfg := diffConfig()
	return &apiEnv{t: t, c: c, v: mustValidator(t, cfg), cfg: cfg, exempt: cfg.ExemptNamespaces[1:], ready: map[string]bool{"kube-system": true, "default": true}}
}

// relaxedCapmoxCRDs writes capmox v0.9.0's CRDs into a temporary folder,
// the machine and template CRDs without the bounds they put on a NIC: the
// minLength of bridge and the minimum and maximum of vlan. The API server checks the schema before
// admission, so with them an empty bridge or a VLAN outside 1-4094 never
// reaches the policies; without them the policies judge those values, as
// on a cluster whose CRDs do not bound them, and the differential test
// compares them with the Go validator. Everything else, a bridge with a
// comma included, meets capmox's schema unchanged.
func relaxedCapmoxCRDs(t *testing.T) string {
	t.Helper()
	src, err := testenv.UpstreamCRDDir("capmox-v0.9.0")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(src, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no capmox CRDs in %s: %v", src, err)
	}
	dir := t.TempDir()
	relaxed := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if names, _ := crd["spec"].(map[string]any)["names"].(map[string]any); names["kind"] == KindMachine || names["kind"] == KindTemplate {
			relaxed += relaxNICBounds(crd)
		}
		out, err := yaml.Marshal(crd)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), out, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Three bounds in each of default and additionalDevices[] (v1alpha1)
	// and networkDevices[] (v1alpha2), in the machine and the template CRD.
	if relaxed != 18 {
		t.Fatalf("relaxed %d bounds of bridge and vlan in capmox's machine CRDs, want 18: has their schema moved?", relaxed)
	}
	return dir
}

// relaxNICBounds deletes minLength from every property bridge and minimum
// and maximum from every property vlan under v, and counts them.
func relaxNICBounds(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok {
			for name, keys := range map[string][]string{"bridge": {"minLength"}, "vlan": {"minimum", "maximum"}} {
				p, ok := props[name].(map[string]any)
				if !ok {
					continue
				}
				for _, k := range keys {
					if _, ok := p[k]; ok {
						delete(p, k)
						n++
					}
				}
			}
		}
		for _, c := range x {
			n += relaxNICBounds(c)
		}
	case []any:
		for _, c := range x {
			n += relaxNICBounds(c)
		}
	}
	return n
}

// installPolicies creates the generated policies. Each binding skips
// objects labelled storedLabel, so a test can store the old object of an
// UPDATE whatever it holds; on UPDATE the policy still runs because the new
// object lacks the label.
func (e *apiEnv) installPolicies(ctx context.Context) {
	set, err := Policies(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range set.Bindings {
		set.Bindings[i].Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: storedLabel, Operator: metav1.LabelSelectorOpDoesNotExist}},
		}}
	}
	for _, o := range set.Objects() {
		if err := e.c.Create(ctx, o.(client.Object)); err != nil {
			e.t.Fatalf("the API server refuses the generated %T: %v", o, err)
		}
	}
	e.waitProbe(ctx, true)
	e.waitPolicies(ctx)
}

// waitPolicies polls, for every policy, the first table pair it refuses
// until the API server refuses it too: each policy takes effect on its
// own, a moment after it is written, later on a loaded machine.
func (e *apiEnv) waitPolicies(ctx context.Context) {
	e.t.Helper()
	cases := allPairCases()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	waited := map[string]bool{}
	for _, n := range names {
		in := e.rename(ctx, cases[n].refused)
		d, err := e.v.Review(in.request(e.t), in.ns)
		if err != nil || d.Allowed || waited[d.Policy] {
			continue
		}
		waited[d.Policy] = true
		deadline := time.Now().Add(30 * time.Second)
		for {
			a, err := e.submit(ctx, in)
			if err == nil && !a.allowed {
				break
			}
			if time.Now().After(deadline) {
				e.t.Fatalf("policy %s did not take effect within 30s (pair %s): %v", d.Policy, n, err)
			}
			time.Sleep(100 * time.Millisecond)
			in = e.rename(ctx, cases[n].refused)
		}
	}
}

// waitProbe polls until a pod attaching a foreign network is refused (or
// admitted): policies and webhook configurations take effect a moment
// after they are written.
func (e *apiEnv) waitProbe(ctx context.Context, refused bool) {
	e.t.Helper()
	ns := e.namespace(ctx, "probe", nil)
	obj := in(ns, pod(ann(AnnotationNetworks, "tenant-x/probe")))
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := e.c.Create(ctx, toUnstructured(obj), client.DryRunAll)
		if (err != nil) == refused {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("admission did not switch within 30s (want refused=%v): %v", refused, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// namespace creates a fresh namespace named after base with annotations
// and returns its name. Fresh names keep the API server's namespace cache
// from answering with an older version.
func (e *apiEnv) namespace(ctx context.Context, base string, annotations map[string]string) string {
	e.t.Helper()
	name := fmt.Sprintf("%s-%d", base, e.seq.Add(1))
	e.createNamespace(ctx, name, annotations)
	return name
}

// shared makes sure a namespace without annotations exists.
func (e *apiEnv) shared(ctx context.Context, name string) {
	if !e.ready[name] {
		e.createNamespace(ctx, name, nil)
		e.ready[name] = true
	}
}

func (e *apiEnv) createNamespace(ctx context.Context, name string, annotations map[string]string) {
	e.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	if err := e.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("cannot create namespace %s: %v", name, err)
	}
}

func toUnstructured(obj m) *unstructured.Unstructured {
	b, _ := json.Marshal(obj)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return &unstructured.Unstructured{Object: out}
}

// apiDecision is what the API server answered.
type apiDecision struct {
	allowed bool
	policy  string
	message string
}

// submit sends in (CREATE, or UPDATE over a stored old object) as a
// server-side dry run and reads the answer of a ValidatingAdmissionPolicy
// or of a webhook.
func (e *apiEnv) submit(ctx context.Context, in input) (apiDecision, error) {
	obj := toUnstructured(in.obj)
	name := fmt.Sprintf("obj-%d", e.seq.Add(1))
	obj.SetName(name)
	if in.op == OperationUpdate {
		old := toUnstructured(in.old)
		old.SetName(name)
		labels := old.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[storedLabel] = "true"
		old.SetLabels(labels)
		deleting := obj.GetDeletionTimestamp() != nil
		obj.SetDeletionTimestamp(nil)
		if deleting {
			old.SetFinalizers([]string{holdFinal})
		}
		if err := e.c.Create(ctx, old); err != nil {
			return apiDecision{}, fmt.Errorf("cannot store the old object: %w", err)
		}
		if deleting {
			if err := e.c.Delete(ctx, old); err != nil {
				return apiDecision{}, fmt.Errorf("cannot start deleting the old object: %w", err)
			}
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
				return apiDecision{}, fmt.Errorf("cannot read the old object back: %w", err)
			}
			obj.SetFinalizers([]string{holdFinal})
		}
		obj.SetResourceVersion(old.GetResourceVersion())
		return readDecision(e.c.Update(ctx, obj, client.DryRunAll))
	}
	return readDecision(e.c.Create(ctx, obj, client.DryRunAll))
}

const (
	vapPrefix     = "ValidatingAdmissionPolicy '"
	webhookPrefix = "admission webhook \""
)

func readDecision(err error) (apiDecision, error) {
	if err == nil {
		return apiDecision{allowed: true}, nil
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		return apiDecision{}, err
	}
	msg := status.ErrStatus.Message
	for _, p := range []struct{ prefix, sep string }{
		{vapPrefix, "' with binding '"},
		{webhookPrefix, "\" denied the request: "},
	} {
		i := strings.Index(msg, p.prefix)
		if i < 0 {
			continue
		}
		rest := msg[i+len(p.prefix):]
		name, _, ok := strings.Cut(rest, p.sep)
		if !ok {
			continue
		}
		if status.ErrStatus.Code != 422 {
			return apiDecision{}, fmt.Errorf("a denial with code %d, want 422: %w", status.ErrStatus.Code, err)
		}
		text := rest[strings.Index(rest, "denied")+len("denied"):]
		text = strings.TrimPrefix(strings.TrimPrefix(text, " request: "), " the request: ")
		return apiDecision{policy: strings.TrimSuffix(name, webhookSuffix), message: text}, nil
	}
	return apiDecision{}, err
}

// agree compares the Go decision with the API server's: the same outcome,
// and for a refusal the same policy and the same message, byte for byte.
func agree(d Decision, a apiDecision) bool {
	if d.Allowed || a.allowed {
		return d.Allowed == a.allowed
	}
	return d.Policy == a.policy && d.Message == a.message
}

// rename gives a pair case a fresh namespace for tenant-a, so its
// annotations are the API server's first sight of that namespace.
func (e *apiEnv) rename(ctx context.Context, in input) input {
	fresh := fmt.Sprintf("ta%d", e.seq.Add(1))
	swap := func(o m) m {
		if o == nil {
			return nil
		}
		b, _ := json.Marshal(o)
		var out m
		_ = json.Unmarshal([]byte(strings.ReplaceAll(string(b), tenant, fresh)), &out)
		return out
	}
	out := input{op: in.op, kind: in.kind, obj: swap(in.obj), old: swap(in.old)}
	target := out.namespace()
	if target == fresh {
		var a map[string]string
		if in.ns != nil {
			a = in.ns.Annotations
		}
		e.createNamespace(ctx, fresh, a)
		out.ns = &Namespace{Name: fresh, Annotations: a}
		return out
	}
	e.shared(ctx, target)
	out.ns = &Namespace{Name: target}
	return out
}

func (e *apiEnv) check(ctx context.Context, t *testing.T, name string, in input) {
	t.Helper()
	d, err := e.v.Review(in.request(t), in.ns)
	if err != nil {
		t.Fatalf("%s: Go validator: %v", name, err)
	}
	a, err := e.submit(ctx, in)
	if err != nil {
		t.Fatalf("%s: API server: %v\nobject %s", name, err, js(t, in.obj))
	}
	if !agree(d, a) {
		t.Errorf("%s: Go says %+v, the API server %+v\nnamespace %+v\nobject %s\nold %s", name, d, a, in.ns, js(t, in.obj), js(t, in.old))
	}
}

// webhookRoundTrip replaces the policies with the webhook Handler served
// over TLS, registered with the server certificate as its CA bundle, and
// requires every table pair to come back the same through real
// AdmissionReviews. A CA bundle that does not match then fails the
// requests closed.
func (e *apiEnv) webhookRoundTrip(ctx context.Context, t *testing.T) {
	for _, b := range []string{PolicyMachineBinding, PolicyVMAttachments, PolicyPodAttachments, PolicyImmutableFields} {
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: b}}
		if err := e.c.Delete(ctx, binding); err != nil {
			t.Fatal(err)
		}
	}
	e.waitProbe(ctx, false)

	var calls atomic.Int64
	getNS := NamespaceFunc(func(ctx context.Context, name string) (*Namespace, error) {
		var ns corev1.Namespace
		err := e.c.Get(ctx, client.ObjectKey{Name: name}, &ns)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return FromCore(&ns), err
	})
	h := NewHandler(e.v, getNS)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		h.ServeHTTP(w, r)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + "/validate"
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	wc, err := WebhookConfiguration("proxmox-network", e.cfg, admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle})
	if err != nil {
		t.Fatal(err)
	}
	for i := range wc.Webhooks {
		wc.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: storedLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
		}}
	}
	if err := e.c.Create(ctx, &wc); err != nil {
		t.Fatalf("the API server refuses the generated webhook configuration: %v", err)
	}
	e.waitProbe(ctx, true)

	cases := allPairCases()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e.check(ctx, t, n+"/refused", e.rename(ctx, cases[n].refused))
		e.check(ctx, t, n+"/admitted", e.rename(ctx, cases[n].admitted))
	}
	if calls.Load() < int64(len(names)) {
		t.Errorf("the webhook served %d reviews for %d pairs", calls.Load(), len(names))
	}

	untrusted := pki.New(t, "untrusted test CA").PEM // signed nothing the test server presents
	for i := range wc.Webhooks {
		wc.Webhooks[i].ClientConfig.CABundle = untrusted
	}
	if err := e.c.Update(ctx, &wc); err != nil {
		t.Fatal(err)
	}
	ns := e.namespace(ctx, "untrusted", nil)
	admitted := toUnstructured(in(ns, pod(ann(AnnotationNetworks, "net"))))
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := e.c.Create(ctx, admitted.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "x509") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with a CA bundle that does not sign the server, want a refusal naming the certificate, got %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
