package lab_test

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
)

// renderedDeployments renders the CSI tenant of testdata and returns its
// Deployments by name.
func renderedDeployments(t *testing.T) map[string]*appsv1.Deployment {
	t.Helper()
	tn, err := lab.ReadTenant(filepath.Join("testdata", "kubernetes-csi.yaml"), filepath.Join("testdata", "nodes.yaml"))
	must(t, err)
	objs, err := capmoxrender.RenderCluster(context.Background(), tn.Cluster, capmoxrender.Options{})
	must(t, err)
	out := map[string]*appsv1.Deployment{}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d))
		out[d.Name] = d
	}
	return out
}

// TestCCMInvocationFollowsRender holds the lab's invocation of the CCM
// and of the CSI controller and its sidecars to the rendered Deployments:
// every container of <cluster>-pccm and <cluster>-pcsi-controller is a
// program the lab has, each runs with exactly the render's arguments in
// the render's order, changed only where the Pod's sandbox differs from
// this machine (a mount path is the volume's folder, the CCM's
// containerPort 10258 a port of the machine), and the init container runs
// the render's own command, with its paths to the volumes' folders.
func TestCCMInvocationFollowsRender(t *testing.T) {
	t.Parallel()
	deps := renderedDeployments(t)
	folders := map[string]string{"kubeconfig": "/pod/kubeconfig", capmoxrender.CredentialsVolume: "/pod/creds",
		"cloud-config": "/pod/cloud-config", "socket-dir": "/pod/socket"}
	host := lab.PodHost{Volumes: folders, Ports: map[int32]int{10258: 41234},
		Program: func(c string) (string, error) { return "/cache/" + c, nil }, Env: []string{"SSL_CERT_FILE=/lab/ca.pem"}}
	sandbox := strings.NewReplacer(capmoxrender.TenantKubeconfigDir+"/", "/pod/kubeconfig/",
		capmoxrender.CloudConfigDir+"/", "/pod/cloud-config/", "unix:///csi/", "unix:///pod/socket/",
		"--secure-port=10258", "--secure-port=41234")
	for _, name := range []string{"kubernetes-demo-pccm", "kubernetes-demo-pcsi-controller"} {
		d := deps[name]
		if d == nil {
			t.Fatalf("the render has no Deployment %s: %v", name, slices.Collect(maps.Keys(deps)))
		}
		spec := d.Spec.Template.Spec
		init, containers, err := lab.Invocations(spec, host)
		must(t, err)
		if len(containers) != len(spec.Containers) || len(init) != 1 {
			t.Fatalf("%s: %d containers and %d init containers run, the render has %d and %d", name, len(containers), len(init), len(spec.Containers), len(spec.InitContainers))
		}
		for i, c := range spec.Containers {
			if _, ok := lab.Programs[c.Name]; !ok {
				t.Errorf("%s: container %s is no program the lab has", name, c.Name)
			}
			inv := containers[i]
			var want []string
			for _, a := range c.Args {
				want = append(want, sandbox.Replace(a))
			}
			if inv.Path != "/cache/"+c.Name || !slices.Equal(inv.Args, want) {
				t.Errorf("%s/%s runs %s %q, want the render's arguments %q in the sandbox: %q", name, c.Name, inv.Path, inv.Args, c.Args, want)
			}
			if !slices.Equal(inv.Env, []string{"SSL_CERT_FILE=/lab/ca.pem"}) {
				t.Errorf("%s/%s: environment %q; the render sets none, the lab adds the trust store only", name, c.Name, inv.Env)
			}
		}
		script := spec.InitContainers[0].Command
		got := init[0]
		wantScript := strings.NewReplacer(capmoxrender.CredentialsDir+"}", "/pod/creds}", capmoxrender.CloudConfigDir+"}", "/pod/cloud-config}").Replace(script[2])
		if got.Path != script[0] || len(got.Args) != 2 || got.Args[0] != script[1] || got.Args[1] != wantScript || wantScript == script[2] {
			t.Errorf("%s: the init container runs %s %q, want the render's %q with the volumes' folders", name, got.Path, got.Args, script)
		}
	}
	if _, err := lab.Program("busybox"); err == nil {
		t.Error("a container the lab has no program for is refused")
	}
}
