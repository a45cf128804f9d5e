package capmoxrender_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// TestMain lets the test binary stand in for kubectl: run under that
// name, it answers from the objects in $FAKE_DIR (fakeKubectlMain).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "kubectl" {
		os.Exit(fakeKubectlMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeKubectlMain answers what the pre-delete script asks of the tenant
// API, from pvcs.json, pods.json and pvs.json in $FAKE_DIR (each a v1
// List), evaluating -o jsonpath templates as kubectl does (client-go's
// jsonpath, missing keys allowed). It models the tenant: a deleted claim
// stays while a Pod mounts it (pvc-protection); once it is gone the CSI
// controller deletes a PersistentVolume of reclaim policy Delete, unless
// the PV is annotated fake/stuck. Every call is logged to $FAKE_DIR/log.
func fakeKubectlMain(args []string) int {
	dir := os.Getenv("FAKE_DIR")
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, "--request-timeout=") })
	logf(dir, "%s", strings.Join(args, " "))
	if _, err := os.Stat(filepath.Join(dir, "unreachable")); err == nil {
		fmt.Fprintln(os.Stderr, "Unable to connect to the server: dial tcp: i/o timeout")
		return 1
	}
	w := fakeWorld{dir: dir}
	switch {
	case len(args) == 5 && args[0] == "get" && args[2] == "-A" && args[3] == "-o" && strings.HasPrefix(args[4], "jsonpath="):
		return w.print(strings.TrimSuffix(args[1], "s")+"s", strings.TrimPrefix(args[4], "jsonpath="))
	case len(args) == 4 && args[0] == "get" && args[1] == "pv" && args[2] == "-o":
		w.collect()
		return w.print("pvs", strings.TrimPrefix(args[3], "jsonpath="))
	case slices.Equal(args, []string{"delete", "pvc", "--all", "--all-namespaces", "--wait=false"}):
		w.update("pvcs", func(o map[string]any) bool { o["metadata"].(map[string]any)["deletionTimestamp"] = "now"; return true })
		return 0
	case len(args) == 6 && args[0] == "-n" && args[2] == "delete" && args[3] == "pod" && args[5] == "--wait=false":
		w.update("pods", func(o map[string]any) bool { return key(o) != args[1]+"/"+args[4] })
		return 0
	}
	fmt.Fprintf(os.Stderr, "fake kubectl: unexpected call %q\n", args)
	return 3
}

func logf(dir, format string, a ...any) {
	f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		fmt.Fprintf(f, format+"\n", a...)
		_ = f.Close()
	}
}

type fakeWorld struct{ dir string }

func key(o map[string]any) string {
	m := o["metadata"].(map[string]any)
	ns, _ := m["namespace"].(string)
	return ns + "/" + m["name"].(string)
}

func (w fakeWorld) items(kind string) []any {
	var list map[string]any
	b, err := os.ReadFile(filepath.Join(w.dir, kind+".json"))
	if err != nil || json.Unmarshal(b, &list) != nil {
		return nil
	}
	items, _ := list["items"].([]any)
	return items
}

func (w fakeWorld) write(kind string, items []any) {
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	_ = os.WriteFile(filepath.Join(w.dir, kind+".json"), b, 0o600)
}

// update keeps the items keep returns true for (keep may change them).
func (w fakeWorld) update(kind string, keep func(map[string]any) bool) {
	var out []any
	for _, it := range w.items(kind) {
		if keep(it.(map[string]any)) {
			out = append(out, it)
		}
	}
	w.write(kind, out)
}

func (w fakeWorld) print(kind, template string) int {
	jp := jsonpath.New("out").AllowMissingKeys(true)
	if err := jp.Parse(template); err != nil {
		fmt.Fprintln(os.Stderr, "error: error parsing jsonpath", err)
		return 1
	}
	if err := jp.Execute(os.Stdout, map[string]any{"apiVersion": "v1", "kind": "List", "items": w.items(kind)}); err != nil {
		fmt.Fprintln(os.Stderr, "error: error executing jsonpath", err)
		return 1
	}
	return 0
}

// collect removes the deleted claims no Pod mounts, and then the
// PersistentVolumes the CSI controller deletes for them.
func (w fakeWorld) collect() {
	mounted := map[string]bool{}
	for _, p := range w.items("pods") {
		pod := p.(map[string]any)
		vols, _, _ := unstructured.NestedSlice(pod, "spec", "volumes")
		for _, v := range vols {
			if c, ok, _ := unstructured.NestedString(v.(map[string]any), "persistentVolumeClaim", "claimName"); ok {
				mounted[strings.Split(key(pod), "/")[0]+"/"+c] = true
			}
		}
	}
	gone := map[string]bool{}
	w.update("pvcs", func(o map[string]any) bool {
		_, deleting := o["metadata"].(map[string]any)["deletionTimestamp"]
		if deleting && !mounted[key(o)] {
			gone[key(o)] = true
			return false
		}
		return true
	})
	w.update("pvs", func(o map[string]any) bool {
		ns, _, _ := unstructured.NestedString(o, "spec", "claimRef", "namespace")
		name, _, _ := unstructured.NestedString(o, "spec", "claimRef", "name")
		policy, _, _ := unstructured.NestedString(o, "spec", "persistentVolumeReclaimPolicy")
		_, stuck := o["metadata"].(map[string]any)["annotations"]
		return !gone[ns+"/"+name] || policy != "Delete" || stuck
	})
}

func pvc(ns, name string) map[string]any {
	return map[string]any{"metadata": map[string]any{"namespace": ns, "name": name}}
}

func pod(ns, name string, claims ...string) map[string]any {
	vols := []any{map[string]any{"name": "cfg", "configMap": map[string]any{"name": "cfg"}}, map[string]any{"name": "scratch", "emptyDir": map[string]any{}}}
	for i, c := range claims {
		vols = append(vols, map[string]any{"name": fmt.Sprintf("v%d", i), "persistentVolumeClaim": map[string]any{"claimName": c}})
	}
	return map[string]any{"metadata": map[string]any{"namespace": ns, "name": name}, "spec": map[string]any{"volumes": vols}}
}

func pv(name, driver, policy, claimNS, claim string, stuck bool) map[string]any {
	meta := map[string]any{"name": name}
	if stuck {
		meta["annotations"] = map[string]any{"fake/stuck": "true"}
	}
	return map[string]any{"metadata": meta, "spec": map[string]any{
		"csi": map[string]any{"driver": driver}, "persistentVolumeReclaimPolicy": policy,
		"claimRef": map[string]any{"namespace": claimNS, "name": claim},
	}}
}

// TestPreDeleteJobScript runs the pre-delete Job's script with the test
// binary as kubectl on PATH against a tenant where one Pod mounts two
// claims, one mounts none, and one mounts a claim name that exists only in
// another namespace: only the Pods holding a claim are deleted, and the
// script waits until the Proxmox volumes of reclaim policy Delete are gone.
func TestPreDeleteJobScript(t *testing.T) {
	objs, err := capmoxrender.RenderCluster(context.Background(), validCluster(), capmoxrender.Options{PreDelete: capmoxrender.PreDeleteOnly})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetKind() != "Job" {
		t.Fatalf("--pre-delete only renders the Job alone, got %d objects", len(objs))
	}
	job := objs[0]
	cs, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	cmdline := cs[0].(map[string]any)["command"].([]any)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const driver = capmoxrender.ProxmoxCSIDriver
	tenant := func() map[string][]any {
		return map[string][]any{
			"pvcs": {pvc("app", "data-a"), pvc("app", "data-b"), pvc("app", "logs"), pvc("other", "data-a")},
			"pods": {pod("app", "db", "data-a", "data-b"), pod("app", "web"), pod("app", "logger", "logs"), pod("other", "reader", "data-b")},
			"pvs": {pv("pv-a", driver, "Delete", "app", "data-a", false), pv("pv-b", driver, "Delete", "app", "data-b", false),
				pv("pv-logs", driver, "Retain", "app", "logs", false), pv("pv-other", driver, "Delete", "other", "data-a", false),
				pv("pv-nfs", "nfs.csi.k8s.io", "Delete", "", "", false)},
		}
	}
	cases := map[string]struct {
		world       func() map[string][]any
		unreachable bool
		deleted     []string // Pods
		pvs         []string // left
		say, warn   string
	}{
		"FreesVolumes": {world: tenant, deleted: []string{"app/db", "app/logger"}, pvs: []string{"pv-logs", "pv-nfs"},
			say: "every Proxmox volume of the tenant tenant-e2e/kubernetes-k8s-e2e is freed"},
		"Stuck": {world: func() map[string][]any {
			w := tenant()
			w["pvs"][0] = pv("pv-a", driver, "Delete", "app", "data-a", true)
			return w
		}, deleted: []string{"app/db", "app/logger"}, pvs: []string{"pv-a", "pv-logs", "pv-nfs"},
			warn: "WARNING: PersistentVolumes still present in the tenant tenant-e2e/kubernetes-k8s-e2e: pv-a;"},
		"NoClaims": {world: func() map[string][]any {
			w := tenant()
			w["pvcs"] = nil
			return w
		}, pvs: []string{"pv-a", "pv-b", "pv-logs", "pv-other", "pv-nfs"}, say: "has no PersistentVolumeClaim"},
		"Unreachable": {world: tenant, unreachable: true, pvs: []string{"pv-a", "pv-b", "pv-logs", "pv-other", "pv-nfs"},
			warn: "WARNING: cannot list the PersistentVolumeClaims"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink(self, filepath.Join(dir, "kubectl")); err != nil {
				t.Fatal(err)
			}
			w := fakeWorld{dir: dir}
			for kind, items := range tc.world() {
				w.write(kind, items)
			}
			if tc.unreachable {
				if err := os.WriteFile(filepath.Join(dir, "unreachable"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tmp := t.TempDir()
			script := strings.ReplaceAll(cmdline[2].(string), "/tmp/", tmp+"/")
			cmd := exec.Command(cmdline[0].(string), cmdline[1].(string), script)
			// GORACE: a -race binary sleeps a second as it exits, and the
			// script runs this one as kubectl a dozen times.
			cmd.Env = append([]string{"PATH=" + dir + ":/usr/bin:/bin", "FAKE_DIR=" + dir, "GORACE=atexit_sleep_ms=0"}, shortWaitEnv(t, job)...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the script must end in success so the deletion goes on: %v\n%s", err, out)
			}
			for _, want := range []string{tc.say, tc.warn} {
				if want != "" && !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if diff := cmp.Diff(tc.deleted, deletedPods(t, dir)); diff != "" {
				t.Errorf("deleted Pods (-want +got):\n%s\n%s", diff, out)
			}
			var left []string
			for _, it := range w.items("pvs") {
				left = append(left, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
			}
			if diff := cmp.Diff(tc.pvs, left); diff != "" {
				t.Errorf("PersistentVolumes left (-want +got):\n%s", diff)
			}
		})
	}
}

// deletedPods reads the Pods the fake kubectl was asked to delete.
func deletedPods(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 6 && f[2] == "delete" && f[3] == "pod" {
			out = append(out, f[1]+"/"+f[4])
		}
	}
	return out
}

// TestPreDeleteRender: the Job is left out by default (the output is for
// kubectl apply), added with the Helm pre-delete hook annotations when
// asked, printed alone for kubectl, and refused alone for a cluster
// without the CSI driver.
func TestPreDeleteRender(t *testing.T) {
	ctx := context.Background()
	count := func(objs []*unstructured.Unstructured) int {
		n := 0
		for _, o := range objs {
			if o.GetKind() == "Job" {
				n++
			}
		}
		return n
	}
	def, err := capmoxrender.RenderCluster(ctx, validCluster(), capmoxrender.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inc, err := capmoxrender.RenderCluster(ctx, validCluster(), capmoxrender.Options{PreDelete: capmoxrender.PreDeleteInclude})
	if err != nil {
		t.Fatal(err)
	}
	if count(def) != 0 || count(inc) != 1 || len(inc) != len(def)+1 {
		t.Fatalf("default renders %d Jobs of %d objects, include %d of %d; want 0 and 1 more", count(def), len(def), count(inc), len(inc))
	}
	job := byKind(inc, "Job")
	want := map[string]string{"helm.sh/hook": "pre-delete", "helm.sh/hook-weight": "-10", "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"}
	if diff := cmp.Diff(want, job.GetAnnotations()); diff != "" {
		t.Errorf("hook annotations (-want +got):\n%s", diff)
	}
	if job.GetName() != "kubernetes-k8s-e2e-free-volumes" || jobEnv(t, job)["KUBECONFIG"] != capmoxrender.TenantKubeconfig {
		t.Errorf("the Job %s must reach the tenant with its admin kubeconfig, env %v", job.GetName(), jobEnv(t, job))
	}
	vols, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "volumes")
	if s, _, _ := unstructured.NestedString(vols[0].(map[string]any), "secret", "secretName"); s != "kubernetes-k8s-e2e-admin-kubeconfig" {
		t.Errorf("the kubeconfig volume mounts %q", s)
	}
	noCSI := validCluster()
	noCSI.Spec.Proxmox.CSI.Enabled = new(bool)
	if objs, err := capmoxrender.RenderCluster(ctx, noCSI, capmoxrender.Options{PreDelete: capmoxrender.PreDeleteInclude}); err != nil || count(objs) != 0 {
		t.Errorf("a cluster without the CSI driver has no Job to include: %d Jobs, %v", count(objs), err)
	}
	_, err = capmoxrender.RenderCluster(ctx, noCSI, capmoxrender.Options{PreDelete: capmoxrender.PreDeleteOnly})
	var refusal *capmoxrender.RefusalError
	if !errors.As(err, &refusal) || refusal.Field != "proxmox.csi.enabled" {
		t.Errorf("only, without the CSI driver, must be refused naming proxmox.csi.enabled, got %v", err)
	}
	if _, err := capmoxrender.RenderCluster(ctx, validCluster(), capmoxrender.Options{PreDelete: "always"}); !errors.Is(err, capmoxrender.ErrInput) {
		t.Errorf("an unknown PreDelete must be an input error, got %v", err)
	}
}
