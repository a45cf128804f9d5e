package crdtest_test

import (
	"bytes"
	"context"
	"net/url"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// lbAddress is the LoadBalancer address the test gives the control plane
// Service, as the management cluster's LoadBalancer provider would.
const lbAddress = "10.0.100.50"

// TestHostEntriesJobOnAPIServer runs the host-entries Job's script, taken
// from the rendered Job, with a real kubectl against a real API server
// (v0.8 generation) that holds the seed pool's objects, as the Job's
// ServiceAccount so that the rendered Role limits it as in the cluster. The
// script leaves the TalosConfigTemplate alone while the control plane
// Service has no LoadBalancer address, cannot patch a template its Role does
// not name, and once the address is there maps the workers' endpoint host to
// it; a second run changes nothing.
func TestHostEntriesJobOnAPIServer(t *testing.T) {
	ctx := context.Background()
	kubectl, err := testenv.FindKubectl()
	if err != nil {
		t.Fatal(err)
	}
	// The Talos bootstrap provider's own CRDs (TalosConfig and
	// TalosConfigTemplate), without its manager: the Job only patches.
	cabpt, err := testenv.ModuleCRDDir(testenv.CABPTModule)
	if err != nil {
		t.Fatal(err)
	}
	cfg, c := testenv.StartAPIServer(t, testenv.APIServerOptions{
		UpstreamCRDs: []string{"capmox-v0.9.0"}, CAPI: true, CAPIIPAM: true, CRDPaths: []string{cabpt},
	})
	job, tct := createSeedPool(t, c)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: jobEnv(t, job, "SVC_NAME")},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "kube-apiserver", Port: 6443}}},
	}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	run := jobRunner(t, cfg, job, kubectl)
	before := getTCT(t, c, tct)

	// The rendered Job waits 180 steps of 10s for an address; two steps
	// of no time show the end of that wait.
	out, err := run(map[string]string{"WAIT_STEPS": "2", "WAIT_SECONDS": "0"})
	if err == nil || !strings.Contains(out, "has no LoadBalancer address") {
		t.Errorf("without a LoadBalancer address the script must fail saying so; err=%v, output:\n%s", err, out)
	}
	assertSpecUnchanged(t, before, getTCT(t, c, tct), "after the run without an address")

	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lbAddress}}
	if err := c.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	other := forbiddenTarget(t, c, before)
	if out, err := run(map[string]string{"TCT_NAME": other.GetName()}); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("patching a TalosConfigTemplate the Role does not name must be forbidden; err=%v, output:\n%s", err, out)
	}
	assertSpecUnchanged(t, other, getTCT(t, c, other.GetName()), "of "+other.GetName()+" after the forbidden run")

	if out, err := run(nil); err != nil {
		t.Fatalf("the host-entries script failed: %v\n%s", err, out)
	}
	patched := getTCT(t, c, tct)
	assertHostEntry(t, patched)
	if out, err := run(nil); err != nil {
		t.Fatalf("the second run of the host-entries script failed: %v\n%s", err, out)
	}
	again := getTCT(t, c, tct)
	if again.GetResourceVersion() != patched.GetResourceVersion() {
		t.Errorf("the second run wrote the TalosConfigTemplate again (resourceVersion %s -> %s)", patched.GetResourceVersion(), again.GetResourceVersion())
	}
	assertSpecUnchanged(t, patched, again, "after the second run")
	assertCredentialsRefKept(t, c)
}

// assertCredentialsRefKept creates the objects of the "cluster-vpc"
// scenario, whose cluster names its own capmox Secret, and checks that the
// ProxmoxCluster the server stores carries the credentialsRef the render
// wrote: the capmox v0.9.0 schema keeps it.
func assertCredentialsRefKept(t *testing.T, c client.Client) {
	t.Helper()
	var pc *unstructured.Unstructured
	created := map[string]bool{}
	for _, s := range loadScenarios(t) {
		if s.Name != "cluster-vpc" {
			continue
		}
		for _, o := range scenario.RenderT(t, s, capmoxrender.CapmoxV08) {
			ensureNamespace(t, c, o.GetNamespace(), created)
			if noUpstreamCRD[o.GetKind()] {
				continue
			}
			if o.GetKind() == "ProxmoxCluster" {
				pc = o
			}
			if err := c.Create(context.Background(), o.DeepCopy()); err != nil {
				t.Fatalf("%s %s/%s rejected by the API server: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	if pc == nil {
		t.Fatal("the cluster-vpc scenario renders no ProxmoxCluster")
	}
	want, _, _ := unstructured.NestedStringMap(pc.Object, "spec", "credentialsRef")
	if want["name"] != "pve-capmox" || want["namespace"] != pc.GetNamespace() {
		t.Fatalf("the render wrote credentialsRef %v, want pve-capmox in %s", want, pc.GetNamespace())
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(pc.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pc), stored); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedStringMap(stored.Object, "spec", "credentialsRef"); !reflect.DeepEqual(got, want) {
		t.Errorf("the stored ProxmoxCluster has credentialsRef %v, want %v as rendered", got, want)
	}
}

// createSeedPool creates every object the "nodes-seed" scenario renders for
// v0.8 (the TalosConfigTemplate through CABPT's own CRD) and returns the
// host-entries Job, which is not created (the test runs its script), and
// the TalosConfigTemplate's name.
func createSeedPool(t *testing.T, c client.Client) (*batchv1.Job, string) {
	t.Helper()
	var (
		job *batchv1.Job
		tct string
	)
	created := map[string]bool{}
	for _, s := range loadScenarios(t) {
		if s.Name != "nodes-seed" {
			continue
		}
		for _, o := range scenario.RenderT(t, s, capmoxrender.CapmoxV08) {
			ensureNamespace(t, c, o.GetNamespace(), created)
			switch o.GetKind() {
			case "Job":
				job = &batchv1.Job{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, job); err != nil {
					t.Fatal(err)
				}
				continue
			case "TalosConfigTemplate":
				tct = o.GetName()
			}
			if err := c.Create(context.Background(), o.DeepCopy()); err != nil {
				t.Fatalf("%s %s/%s rejected by the API server: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	if job == nil || tct == "" || jobEnv(t, job, "TCT_NAME") != tct {
		t.Fatalf("want the seed pool to render a TalosConfigTemplate and the Job patching it; got template %q", tct)
	}
	return job, tct
}

// jobRunner returns a function that runs the Job's container command as
// rendered, with its environment (overridden by the map), kubectl first on
// PATH, a kubeconfig for the test server impersonating the Job's
// ServiceAccount, and HOME in a scratch folder as the Pod's emptyDir /tmp.
func jobRunner(t *testing.T, cfg *rest.Config, job *batchv1.Job, kubectl string) func(map[string]string) (string, error) {
	t.Helper()
	ctr := job.Spec.Template.Spec.Containers[0]
	sa := "system:serviceaccount:" + job.Namespace + ":" + job.Spec.Template.Spec.ServiceAccountName
	kubeconfig := testenv.KubeconfigFile(t, cfg, sa)
	home := t.TempDir()
	return func(over map[string]string) (string, error) {
		env := []string{"PATH=" + filepath.Dir(kubectl) + ":/usr/bin:/bin", "KUBECONFIG=" + kubeconfig}
		for _, e := range ctr.Env {
			v, ok := over[e.Name]
			switch {
			case e.Name == "HOME":
				v = home
			case !ok:
				v = e.Value
			}
			env = append(env, e.Name+"="+v)
		}
		cmd := exec.Command(ctr.Command[0], ctr.Command[1:]...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
}

func jobEnv(t *testing.T, job *batchv1.Job, name string) string {
	t.Helper()
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("the host-entries Job has no %s in its environment", name)
	return ""
}

var tctGVK = schema.GroupVersionKind{Group: capmoxrender.TalosGroup, Version: "v1alpha3", Kind: "TalosConfigTemplate"}

func getTCT(t *testing.T, c client.Client, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(tctGVK)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "tenant-demo", Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// forbiddenTarget creates a second TalosConfigTemplate, like the seed
// pool's but under a name the Job's Role does not list.
func forbiddenTarget(t *testing.T, c client.Client, like *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": like.Object["spec"]}}
	u.SetGroupVersionKind(tctGVK)
	u.SetNamespace(like.GetNamespace())
	u.SetName(like.GetName() + "-other")
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func assertSpecUnchanged(t *testing.T, before, after *unstructured.Unstructured, when string) {
	t.Helper()
	if !reflect.DeepEqual(before.Object["spec"], after.Object["spec"]) {
		t.Errorf("the TalosConfigTemplate spec changed %s:\nbefore %v\nafter  %v", when, before.Object["spec"], after.Object["spec"])
	}
}

// assertHostEntry checks that the template's host entries map the host of
// its own control plane endpoint to the Service's LoadBalancer address.
func assertHostEntry(t *testing.T, tct *unstructured.Unstructured) {
	t.Helper()
	patches, _, err := unstructured.NestedSlice(tct.Object, "spec", "template", "spec", "configPatches")
	if err != nil {
		t.Fatal(err)
	}
	var host string
	var entries any
	for _, p := range patches {
		m, _ := p.(map[string]any)
		switch m["path"] {
		case "/cluster/controlPlane":
			v, _ := m["value"].(map[string]any)
			ep, _ := v["endpoint"].(string)
			if u, err := url.Parse(ep); err == nil {
				host = u.Hostname()
			}
		case capmoxrender.HostEntriesPath:
			entries = m["value"]
		}
	}
	want := []any{map[string]any{"ip": lbAddress, "aliases": []any{host}}}
	if host == "" || !reflect.DeepEqual(entries, want) {
		t.Errorf("extraHostEntries = %v, want %v (the endpoint host %q mapped to the LoadBalancer address)", entries, want, host)
	}
}
