package controller_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/controller"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
)

var update = flag.Bool("update", false, "rewrite the generated manifests under config/")

// TestGeneratedManifests keeps config/policies and the webhook
// configuration equal to what the admission package generates.
func TestGeneratedManifests(t *testing.T) {
	root := controllertest.RepoRoot(t)
	gen, err := controller.GeneratedManifests()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range gen {
		file := filepath.Join(root, path)
		if *update {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("cannot read %s (regenerate with -update): %v", path, err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s is stale; run go test ./internal/controller -run TestGeneratedManifests -update: -want +got:\n%s", path, diff)
		}
	}
}

// build runs kustomize over dir, relative to the repository root.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	return controllertest.Kustomize(t, dir)
}

// index lists the objects as "Kind namespace/name".
func index(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

func TestKustomizeBuilds(t *testing.T) {
	common := []string{
		"ClusterRole /proxmox-network-controller",
		"ClusterRole /proxmox-network-controller-metrics-reader",
		"ClusterRoleBinding /proxmox-network-controller",
		"CustomResourceDefinition /proxmoxnetworks.proxmox.cozystack.io",
		"CustomResourceDefinition /proxmoxnetworkzones.proxmox.cozystack.io",
		"CustomResourceDefinition /proxmoxvlanclaims.proxmox.cozystack.io",
		"Deployment cozy-proxmox-network/proxmox-network-controller",
		"Namespace /cozy-proxmox-network",
		"Role cozy-kubeovn/proxmox-network-controller-ovn-tls",
		"Role cozy-proxmox-network/proxmox-network-controller-leader-election",
		"RoleBinding cozy-kubeovn/proxmox-network-controller-ovn-tls",
		"RoleBinding cozy-proxmox-network/proxmox-network-controller-leader-election",
		"Service cozy-proxmox-network/proxmox-network-controller-metrics",
		"ServiceAccount cozy-proxmox-network/proxmox-network-controller",
	}
	cases := map[string]struct {
		reason   string
		dir      string
		extra    []string
		replicas int32
		webhook  bool
	}{
		"Install": {
			reason: "config holds the CRDs, the controller and the admission policies",
			dir:    "config",
			extra: []string{
				"ValidatingAdmissionPolicy /proxmox-kubernetes-immutable-fields",
				"ValidatingAdmissionPolicy /proxmox-network-machine-binding",
				"ValidatingAdmissionPolicy /proxmox-network-pod-attachments",
				"ValidatingAdmissionPolicy /proxmox-network-vm-attachments",
				"ValidatingAdmissionPolicyBinding /proxmox-kubernetes-immutable-fields",
				"ValidatingAdmissionPolicyBinding /proxmox-network-machine-binding",
				"ValidatingAdmissionPolicyBinding /proxmox-network-pod-attachments",
				"ValidatingAdmissionPolicyBinding /proxmox-network-vm-attachments",
			},
			replicas: 1,
		},
		"Webhook": {
			reason: "config/webhook judges through two replicas' webhook instead of the policies, one kept through drains by a PDB; it carries the CRDs too",
			dir:    "config/webhook",
			extra: []string{"ConfigMap cozy-proxmox-network/proxmox-network-controller-admission", "PodDisruptionBudget cozy-proxmox-network/proxmox-network-controller",
				"Service cozy-proxmox-network/proxmox-network-controller-webhook", "ValidatingWebhookConfiguration /proxmox-network-controller"},
			replicas: 2,
			webhook:  true,
		},
	}
	t.Run("CRDs", func(t *testing.T) {
		// kubectl kustomize config/crd: the CRDs alone.
		if diff := cmp.Diff(common[3:6], index(build(t, "config/crd"))); diff != "" {
			t.Errorf("config/crd: -want +got:\n%s", diff)
		}
	})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := build(t, tc.dir)
			want := append(slices.Clone(common), tc.extra...)
			slices.Sort(want)
			if diff := cmp.Diff(want, index(objs)); diff != "" {
				t.Errorf("%s\nobjects: -want +got:\n%s", tc.reason, diff)
			}
			checkDeployment(t, objs, tc.replicas, tc.webhook)
		})
	}
}

// checkDeployment checks what production asks of the controller's pod.
func checkDeployment(t *testing.T, objs []*unstructured.Unstructured, replicas int32, webhook bool) {
	t.Helper()
	var d appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatal(err)
			}
		}
	}
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	args := strings.Join(c.Args, " ")
	checks := map[string]bool{
		"replicas":                 d.Spec.Replicas != nil && *d.Spec.Replicas == replicas,
		"service account":          spec.ServiceAccountName == controller.ServiceAccountName,
		"non-root pod":             spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot,
		"non-root container":       sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && sc.RunAsUser != nil && *sc.RunAsUser != 0,
		"read-only root fs":        sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
		"no privilege escalation":  sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		"all capabilities dropped": sc != nil && sc.Capabilities != nil && slices.Contains(sc.Capabilities.Drop, "ALL"),
		"liveness /healthz":        c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path == "/healthz",
		"readiness /readyz":        c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path == "/readyz",
		"leader election":          strings.Contains(args, "--leader-elect=true"),
		"authenticated metrics":    strings.Contains(args, "--metrics-secure=true"),
		"TLS secret by name":       strings.Contains(args, "--ovn-tls-secret=cozy-kubeovn/kube-ovn-tls"),
		"webhook as configured":    strings.Contains(args, "--webhook-port=0") != webhook,
		"grace after shutdown":     spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds > 30,
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("Deployment: %s does not hold", what)
		}
	}
	o := controller.DefaultOptions()
	if err := flagsParse(&o, c.Args); err != nil {
		t.Errorf("the Deployment's args do not parse: %v", err)
	}
}

// applyAll applies objs through c, server-side, as a dry run when dryRun.
func applyAll(t *testing.T, c client.Client, objs []*unstructured.Unstructured, dryRun bool) {
	controllertest.Apply(t, c, objs, dryRun)
}
