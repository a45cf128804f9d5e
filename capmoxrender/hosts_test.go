package capmoxrender_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

func byKind(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func liveService(ns, name, ip string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"type": "LoadBalancer"}}}
	u.SetAPIVersion("v1")
	u.SetKind("Service")
	u.SetNamespace(ns)
	u.SetName(name)
	if ip != "" {
		u.Object["status"] = map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": ip}}}}
	}
	return u
}

// shortWaitEnv is a Job's environment as NAME=VALUE, its waits cut to
// two steps of no time.
func shortWaitEnv(t *testing.T, job *unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for k, v := range jobEnv(t, job) {
		switch k {
		case "WAIT_STEPS":
			v = "2"
		case "WAIT_SECONDS":
			v = "0"
		}
		out = append(out, k+"="+v)
	}
	return out
}

func jobEnv(t *testing.T, job *unstructured.Unstructured) map[string]string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("the Job has %d containers, want 1", len(cs))
	}
	env := map[string]string{}
	for _, e := range cs[0].(map[string]any)["env"].([]any) {
		m := e.(map[string]any)
		env[m["name"].(string)] = m["value"].(string)
	}
	return env
}

// TestHostEntriesNamesAgree: the MachineDeployment's configRef, the Job's
// TCT_NAME (and name) and the Role's resourceNames name the same
// TalosConfigTemplate, and the Role reaches only the control plane Service.
func TestHostEntriesNamesAgree(t *testing.T) {
	for _, gen := range []capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08} {
		objs, err := capmoxrender.RenderNodes(context.Background(), validNodes(), capmoxrender.Options{Capmox: gen})
		if err != nil {
			t.Fatal(err)
		}
		tct := byKind(objs, "TalosConfigTemplate").GetName()
		ref, _, _ := unstructured.NestedString(mdOf(t, objs).Object, "spec", "template", "spec", "bootstrap", "configRef", "name")
		job := byKind(objs, "Job")
		env := jobEnv(t, job)
		role := byKind(objs, "Role")
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		got := map[string][]any{}
		for _, r := range rules {
			m := r.(map[string]any)
			res := m["resources"].([]any)[0].(string)
			got[res] = m["resourceNames"].([]any)
		}
		want := map[string][]any{"services": {"kubernetes-k8s-e2e"}, "talosconfigtemplates": {tct}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Role resourceNames (-want +got):\n%s", gen, diff)
		}
		if ref != tct || env["TCT_NAME"] != tct || job.GetName() != tct {
			t.Errorf("%s: configRef %q, TCT_NAME %q, Job %q, TalosConfigTemplate %q must agree", gen, ref, env["TCT_NAME"], job.GetName(), tct)
		}
		if env["SVC_NAME"] != "kubernetes-k8s-e2e" || env["SVC_HOST"] != "kubernetes-k8s-e2e.tenant-e2e.svc" {
			t.Errorf("%s: the Job reads %s and maps %s", gen, env["SVC_NAME"], env["SVC_HOST"])
		}
		sa, _, _ := unstructured.NestedString(job.Object, "spec", "template", "spec", "serviceAccountName")
		subj, _, _ := unstructured.NestedSlice(byKind(objs, "RoleBinding").Object, "subjects")
		if sa != role.GetName() || subj[0].(map[string]any)["name"] != sa || byKind(objs, "ServiceAccount").GetName() != sa {
			t.Errorf("%s: the Job's ServiceAccount %q, the RoleBinding subject and the Role %q must agree", gen, sa, role.GetName())
		}
	}
}

// TestHostEntriesFromLookup: with the live Service's address the entry is
// rendered and no Job or privilege is; a Service without an address keeps
// the Job; a hostname is refused.
func TestHostEntriesFromLookup(t *testing.T) {
	cases := map[string]struct {
		svc     *unstructured.Unstructured
		entries []any
		job     bool
		want    string
	}{
		"Address": {svc: liveService("tenant-e2e", "kubernetes-k8s-e2e", "192.0.2.10"),
			entries: []any{map[string]any{"ip": "192.0.2.10", "aliases": []any{"kubernetes-k8s-e2e.tenant-e2e.svc"}}}},
		"NoAddressYet": {svc: liveService("tenant-e2e", "kubernetes-k8s-e2e", ""), entries: []any{}, job: true},
		"NoService":    {svc: liveService("tenant-e2e", "other", "192.0.2.10"), entries: []any{}, job: true},
		"Hostname": {svc: liveService("tenant-e2e", "kubernetes-k8s-e2e", "lb.example.net"),
			want: `Service tenant-e2e/kubernetes-k8s-e2e has LoadBalancer address "lb.example.net", which is not an IP address: Talos host entries map a name to an IP`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := &capmoxrender.Objects{}
			l.Add(tc.svc)
			objs, err := capmoxrender.RenderNodes(context.Background(), validNodes(), capmoxrender.Options{Clusters: l})
			checkRefusal(t, name, err, tc.want)
			if tc.want != "" {
				return
			}
			patches, _, _ := unstructured.NestedSlice(byKind(objs, "TalosConfigTemplate").Object, "spec", "template", "spec", "configPatches")
			p := patches[capmoxrender.HostEntriesPatchIndex].(map[string]any)
			if p["path"] != capmoxrender.HostEntriesPath {
				t.Fatalf("patch %d is %v, want the host entries", capmoxrender.HostEntriesPatchIndex, p["path"])
			}
			if diff := cmp.Diff(tc.entries, p["value"]); diff != "" {
				t.Errorf("host entries (-want +got):\n%s", diff)
			}
			for _, k := range []string{"Job", "Role", "RoleBinding", "ServiceAccount"} {
				if (byKind(objs, k) != nil) != tc.job {
					t.Errorf("%s rendered: %t, want %t", k, byKind(objs, k) != nil, tc.job)
				}
			}
		})
	}
}

// TestHostEntriesJobScript runs the Job's script with sh against a kubectl
// that answers the Service's address and records the patch, then applies
// the recorded JSON patch to the rendered TalosConfigTemplate.
func TestHostEntriesJobScript(t *testing.T) {
	objs, err := capmoxrender.RenderNodes(context.Background(), validNodes(), capmoxrender.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tct := byKind(objs, "TalosConfigTemplate")
	job := byKind(objs, "Job")
	cs, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	cmdline := cs[0].(map[string]any)["command"].([]any)
	cases := map[string]struct {
		ip, wantErr string
	}{
		"Address":   {ip: "192.0.2.10"},
		"IPv6":      {ip: "2001:db8::10"},
		"NoAddress": {ip: "", wantErr: "has no LoadBalancer address"},
		"Injection": {ip: `1.2.3.4"},{"op":"remove`, wantErr: "is not an IP address"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			fakeKubectl := "#!/bin/sh\ncase \"$*\" in\n*' get service '*) printf '%s' \"$FAKE_SVC_IP\" ;;\n*' patch '*) for a; do last=\"$a\"; done; printf '%s' \"$last\" > \"$FAKE_DIR/patch\"; printf '%s\\n' \"$*\" > \"$FAKE_DIR/args\" ;;\n*) exit 3 ;;\nesac\n"
			if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(fakeKubectl), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(cmdline[0].(string), cmdline[1].(string), cmdline[2].(string))
			cmd.Env = append([]string{"PATH=" + dir + ":/usr/bin:/bin", "FAKE_SVC_IP=" + tc.ip, "FAKE_DIR=" + dir}, shortWaitEnv(t, job)...)
			out, err := cmd.CombinedOutput()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(string(out), tc.wantErr) {
					t.Fatalf("want a failure saying %q, got %v: %s", tc.wantErr, err, out)
				}
				if _, err := os.Stat(filepath.Join(dir, "patch")); err == nil {
					t.Fatal("nothing may be patched after a failure")
				}
				return
			}
			if err != nil {
				t.Fatalf("script: %v: %s", err, out)
			}
			args, _ := os.ReadFile(filepath.Join(dir, "args"))
			if !strings.Contains(string(args), "patch talosconfigtemplate "+tct.GetName()+" ") {
				t.Fatalf("the script patched %s", args)
			}
			raw, _ := os.ReadFile(filepath.Join(dir, "patch"))
			patch, err := jsonpatch.DecodePatch(raw)
			if err != nil {
				t.Fatalf("the script's patch is not a JSON patch: %v: %s", err, raw)
			}
			doc, _ := json.Marshal(tct.Object)
			patched, err := patch.Apply(doc)
			if err != nil {
				t.Fatalf("the patch does not apply to the rendered TalosConfigTemplate: %v", err)
			}
			var got unstructured.Unstructured
			if err := json.Unmarshal(patched, &got.Object); err != nil {
				t.Fatal(err)
			}
			patches, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "configPatches")
			want := map[string]any{"op": "add", "path": capmoxrender.HostEntriesPath, "value": []any{map[string]any{"ip": tc.ip, "aliases": []any{"kubernetes-k8s-e2e.tenant-e2e.svc"}}}}
			if diff := cmp.Diff(want, patches[capmoxrender.HostEntriesPatchIndex]); diff != "" {
				t.Errorf("patched entry (-want +got):\n%s", diff)
			}
			before, _, _ := unstructured.NestedSlice(tct.Object, "spec", "template", "spec", "configPatches")
			if len(patches) != len(before) {
				t.Errorf("the patch changed the number of config patches from %d to %d", len(before), len(patches))
			}
		})
	}
}
