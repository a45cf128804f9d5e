package capmoxrender_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
)

// initScript returns the build-cloud-config script of the named Deployment.
func initScript(t *testing.T, name string) string {
	t.Helper()
	objs, err := capmoxrender.RenderCluster(context.Background(), validCluster(), capmoxrender.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != name {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		c := d.Spec.Template.Spec.InitContainers[0]
		if c.Name != capmoxrender.BuildCloudConfigName || len(c.Command) != 3 || c.Command[0] != "/bin/sh" {
			t.Fatalf("unexpected init container %+v", c)
		}
		return c.Command[2]
	}
	t.Fatalf("no Deployment %s", name)
	return ""
}

type cloudConfig struct {
	Features map[string]any `json:"features"`
	Clusters []struct {
		URL         string `json:"url"`
		Insecure    bool   `json:"insecure"`
		TokenID     string `json:"token_id"`
		TokenSecret string `json:"token_secret"`
		Region      string `json:"region"`
	} `json:"clusters"`
}

// runInit runs the script with /bin/sh over a credentials folder holding
// creds, as the init container does over the mounted Secret.
func runInit(t *testing.T, script string, creds map[string]string) (cloudConfig, os.FileMode, string, error) {
	t.Helper()
	in, out := t.TempDir(), t.TempDir()
	for k, v := range creds {
		if err := os.WriteFile(filepath.Join(in, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PROXMOX_CREDENTIALS_DIR=" + in, "CLOUD_CONFIG_DIR=" + out}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return cloudConfig{}, 0, stderr.String(), err
	}
	p := filepath.Join(out, "config.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var c cloudConfig
	if err := strictyaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("the cloud-config is not the expected YAML: %v\n%s", err, b)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return c, fi.Mode().Perm(), stderr.String(), nil
}

func TestCloudConfigScript(t *testing.T) {
	creds := map[string]string{"url": "https://pve:8006/api2/json\n", "token_id": "ccm@pve!ccm", "token_secret": "it's-a-secret", "region": "pve-eu1"}
	t.Run("CCM", func(t *testing.T) {
		c, mode, _, err := runInit(t, initScript(t, "kubernetes-k8s-e2e-pccm"), creds)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"provider": "capmox"}, c.Features); diff != "" {
			t.Errorf("features (-want +got):\n%s", diff)
		}
		if len(c.Clusters) != 1 || c.Clusters[0].URL != "https://pve:8006/api2/json" || c.Clusters[0].TokenSecret != "it's-a-secret" || c.Clusters[0].Region != "pve-eu1" || c.Clusters[0].Insecure {
			t.Errorf("clusters entry: %+v", c.Clusters)
		}
		if mode != 0o600 {
			t.Errorf("the cloud-config holds the token and must be 0600 (umask 077), is %o", mode)
		}
	})
	t.Run("CSI", func(t *testing.T) {
		c, _, _, err := runInit(t, initScript(t, "kubernetes-k8s-e2e-pcsi-controller"), creds)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"provider": "capmox", "controllerVmID": int64(capmoxrender.ControllerVMID("tenant-e2e", "kubernetes-k8s-e2e"))}
		if diff := cmp.Diff(want, c.Features); diff != "" {
			t.Errorf("features (-want +got):\n%s", diff)
		}
	})
	t.Run("MissingKey", func(t *testing.T) {
		partial := map[string]string{"url": "https://pve:8006/api2/json", "token_id": "ccm@pve!ccm", "token_secret": "s"}
		_, _, stderr, err := runInit(t, initScript(t, "kubernetes-k8s-e2e-pccm"), partial)
		if err == nil || !strings.Contains(stderr, "the credentials Secret has no key 'region';") {
			t.Fatalf("a missing key must fail the init container with its name, got %v %q", err, stderr)
		}
	})
}

// TestClusterInvariants checks, for both generations, what must hold of
// every rendered cluster whatever the golden files say.
func TestClusterInvariants(t *testing.T) {
	for _, gen := range generations {
		t.Run(string(gen), func(t *testing.T) {
			objs, err := capmoxrender.RenderCluster(context.Background(), validCluster(), capmoxrender.Options{Capmox: gen})
			if err != nil {
				t.Fatal(err)
			}
			deployments := 0
			for _, o := range objs {
				switch o.GetKind() {
				case "ProxmoxCluster":
					if _, ok := o.GetAnnotations()["cluster.x-k8s.io/managed-by"]; ok {
						t.Error("the ProxmoxCluster must not carry cluster.x-k8s.io/managed-by")
					}
					if v, _, _ := unstructuredBool(o.Object, "spec", "externalManagedControlPlane"); !v {
						t.Error("externalManagedControlPlane must be true")
					}
				case "KamajiControlPlane":
					if v := o.Object["spec"].(map[string]any)["network"].(map[string]any)["serviceType"]; v != "LoadBalancer" {
						t.Errorf("the control plane must be a LoadBalancer, is %v", v)
					}
				case "Deployment":
					deployments++
					var d appsv1.Deployment
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
						t.Fatal(err)
					}
					tol := d.Spec.Template.Spec.Tolerations
					if len(tol) != 2 || tol[0].Key != "CriticalAddonsOnly" || tol[1].Key != "node-role.kubernetes.io/control-plane" || tol[1].Effect != "NoSchedule" {
						t.Errorf("%s: want exactly the two tolerations, got %+v", d.Name, tol)
					}
					if d.Spec.Template.Labels[capmoxrender.LabelAllowToAPIServer] != "true" || d.Spec.Template.Spec.PriorityClassName != "system-cluster-critical" {
						t.Errorf("%s: pod label or priority class missing", d.Name)
					}
				}
			}
			if deployments != 2 {
				t.Errorf("want the CCM and CSI Deployments, got %d", deployments)
			}
		})
	}
}

func unstructuredBool(m map[string]any, path ...string) (bool, bool, error) {
	for _, p := range path[:len(path)-1] {
		m, _ = m[p].(map[string]any)
	}
	v, ok := m[path[len(path)-1]].(bool)
	return v, ok, nil
}
