package capi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// obj is an unstructured object of apiVersion and kind named name in
// namespace default.
func obj(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

// capmoxRefusal is, for one capmox generation, an object its validating
// webhook refuses (its CRD schema admits it) with the webhook's own words,
// and an admitted control that differs only in the refused field.
type capmoxRefusal struct {
	refused, admitted *unstructured.Unstructured
	// message is the refusal's text, in parts around what Go prints of a
	// struct with pointers.
	message []string
}

// capmoxRefusals: v0.9.0 validates ProxmoxMachineTemplates (a providerID
// in a template); v0.7.2 has no webhook for templates and validates
// ProxmoxMachines (an MTU its schema allows, below the webhook's 1280).
var capmoxRefusals = map[Capmox]func() capmoxRefusal{
	CapmoxV09: func() capmoxRefusal {
		tmpl := func(name string, providerID string) *unstructured.Unstructured {
			spec := map[string]any{
				"sourceNode": "pve1", "templateID": int64(100),
				"network": map[string]any{"networkDevices": []any{map[string]any{"bridge": "vmbr0", "model": "virtio"}}},
			}
			if providerID != "" {
				spec["providerID"] = providerID
			}
			return obj("infrastructure.cluster.x-k8s.io/v1alpha2", "ProxmoxMachineTemplate", name,
				map[string]any{"template": map[string]any{"spec": spec}})
		}
		return capmoxRefusal{
			refused: tmpl("with-provider-id", "proxmox://4ba1e1b6-5a5b-4b6c-9d8e-0f1a2b3c4d5e"), admitted: tmpl("control", ""),
			message: []string{`admission webhook "validation.proxmoxmachinetemplate.infrastructure.cluster.x-k8s.io" denied the request: ` +
				`ProxmoxMachineTemplate.infrastructure.cluster.x-k8s.io "with-provider-id" is invalid: ` +
				`spec.template.spec.providerID: Forbidden: cannot be set in templates`},
		}
	},
	CapmoxV07: func() capmoxRefusal {
		machine := func(name string, mtu int64) *unstructured.Unstructured {
			return obj("infrastructure.cluster.x-k8s.io/v1alpha1", "ProxmoxMachine", name, map[string]any{
				"sourceNode": "pve1", "templateID": int64(100),
				"network": map[string]any{"default": map[string]any{"bridge": "vmbr0", "mtu": mtu}},
			})
		}
		return capmoxRefusal{
			refused: machine("mtu-1000", 1000), admitted: machine("control", 1500),
			message: []string{
				`admission webhook "validation.proxmoxmachine.infrastructure.cluster.x-k8s.io" denied the request: ` +
					`ProxmoxMachine.infrastructure.cluster.x-k8s.io "mtu-1000" is invalid: spec.network.default.mtu: Invalid value: ` +
					`v1alpha1.NetworkDevice{Bridge:"vmbr0", `,
				`}: mtu must be at least 1280 or 1, but was 1000`,
			},
		}
	},
}

// TestCapmoxManagersStart starts, for each capmox generation, its manager
// and CABPT's on an API server with Cluster API core's and the IPAM
// provider's CRDs, while the test process carries PROXMOX_URL,
// PROXMOX_TOKEN and PROXMOX_SECRET for an address nothing listens on
// (capmox would build one client from them and exit when it cannot reach
// it): both managers get ready, and capmox's environment holds no
// PROXMOX_*. Each validating webhook then refuses an object its schema
// admits, by its own message, next to an admitted control; for v0.9.0 a
// v1alpha1 ProxmoxMachineTemplate is read back as v1alpha2 with its
// network moved by the conversion webhook, and for CABPT a v1alpha2
// TalosConfig is read back as v1alpha3.
//
// Where the test process may make network namespaces, both generations run
// at once, each in its own, while the test holds the machine's port 9443:
// neither capmox needs it.
func TestCapmoxManagersStart(t *testing.T) {
	t.Setenv("PROXMOX_URL", "https://127.0.0.1:1")
	t.Setenv("PROXMOX_TOKEN", "root@pam!leak")
	t.Setenv("PROXMOX_SECRET", "00000000-0000-0000-0000-000000000000")
	isolated := holdMachinePort(t, capmoxWebhookPort)
	for _, gen := range []Capmox{CapmoxV09, CapmoxV07} {
		t.Run(string(gen), func(t *testing.T) {
			if isolated {
				// The parent's t.Setenv holds until both end.
				t.Parallel()
			}
			cfg, c := testenv.StartAPIServer(t, testenv.APIServerOptions{CAPI: true, CAPIIPAM: true})
			start := time.Now()
			m := StartT(t, cfg, Options{Capmox: gen, CABPT: true})
			t.Logf("capmox %s and CABPT ready in %s", gen, time.Since(start).Round(100*time.Millisecond))
			checkNoProxmoxEnv(t, m.Capmox.Pid())
			r := capmoxRefusals[gen]()
			checkRefusal(t, c, r.refused, r.admitted, r.message...)
			checkCABPTWebhook(t, c)
			if gen == CapmoxV09 {
				checkCapmoxConversion(t, c)
			}
			checkCABPTConversion(t, c)
		})
	}
}

// holdMachinePort listens on port of every address of the machine for the
// rest of t (taking its lock first, which a capmox manager without a
// namespace of its own would wait for) when the test process may make
// network namespaces, and says whether it does.
func holdMachinePort(t *testing.T, port int) bool {
	t.Helper()
	ns, err := newNetns()
	if errors.Is(err, errNoNamespace) {
		t.Logf("no network namespaces here (%v): capmox holds the machine's port %d, one at a time", err, port)
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	ns.close()
	release, err := lockPort(port, portLockTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		t.Fatalf("cannot hold the machine's port %d: %v", port, err)
	}
	t.Cleanup(func() { l.Close() })
	return true
}

// checkNoProxmoxEnv reads the manager's environment from /proc (Linux).
func checkNoProxmoxEnv(t *testing.T, pid int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if bytes.HasPrefix(kv, []byte("PROXMOX_")) {
			t.Errorf("capmox runs with %s from the test process", kv)
		}
	}
}

// checkRefusal creates admitted, which must pass, and refused, which must
// be refused as Invalid with a message made of the parts of message, in
// that order.
func checkRefusal(t *testing.T, c client.Client, refused, admitted *unstructured.Unstructured, message ...string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, admitted); err != nil {
		t.Errorf("the control %s was refused: %v", admitted.GetKind(), err)
	}
	err := c.Create(ctx, refused)
	if !apierrors.IsInvalid(err) || !inOrder(err.Error(), message) {
		t.Errorf("%s %s: want the webhook's refusal %q, got %v", refused.GetKind(), refused.GetName(), message, err)
	}
}

// inOrder says whether s holds every part, each after the one before.
func inOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// checkCABPTWebhook: a hostname source CABPT does not know is refused by
// its webhook; the CRD has no enum for it.
func checkCABPTWebhook(t *testing.T, c client.Client) {
	t.Helper()
	tc := func(name, source string) *unstructured.Unstructured {
		return obj("bootstrap.cluster.x-k8s.io/v1alpha3", "TalosConfig", name, map[string]any{
			"generateType": "worker", "talosVersion": "v1.11", "hostname": map[string]any{"source": source},
		})
	}
	checkRefusal(t, c, tc("hostname-from-dns", "DNS"), tc("talos-control", "MachineName"),
		`admission webhook "vtalosconfig.cluster.x-k8s.io" denied the request: TalosConfig.bootstrap.cluster.x-k8s.io `+
			`"hostname-from-dns" is invalid: spec.hostname.source: Invalid value: "DNS": valid values are: `+
			`["MachineName" "InfrastructureName"]`)
}

// checkCapmoxConversion creates a v1alpha1 ProxmoxMachineTemplate (whose
// network has a default device) and reads it as v1alpha2, where capmox's
// conversion makes that device networkDevices[0], named net0.
func checkCapmoxConversion(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	old := obj("infrastructure.cluster.x-k8s.io/v1alpha1", "ProxmoxMachineTemplate", "from-v1alpha1", map[string]any{
		"template": map[string]any{"spec": map[string]any{
			"sourceNode": "pve1", "templateID": int64(100),
			"network": map[string]any{"default": map[string]any{"bridge": "vmbr7", "model": "virtio"}},
		}},
	})
	if err := c.Create(ctx, old); err != nil {
		t.Fatalf("a v1alpha1 ProxmoxMachineTemplate was refused: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1alpha2")
	got.SetKind("ProxmoxMachineTemplate")
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatalf("the v1alpha1 ProxmoxMachineTemplate cannot be read as v1alpha2: %v", err)
	}
	devices, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "network", "networkDevices")
	if len(devices) != 1 {
		t.Fatalf("read as v1alpha2: want one network device from the v1alpha1 default, got %v", got.Object["spec"])
	}
	d, _ := devices[0].(map[string]any)
	if d["bridge"] != "vmbr7" || d["name"] != "net0" {
		t.Errorf("read as v1alpha2: want net0 on vmbr7, got %v", d)
	}
}

// checkCABPTConversion: CABPT's CRDs convert through its webhook, and a
// v1alpha2 TalosConfig is served as v1alpha3 (the storage version).
func checkCABPTConversion(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := c.Get(ctx, client.ObjectKey{Name: "talosconfigs.bootstrap.cluster.x-k8s.io"}, crd); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); s != string(apiextv1.WebhookConverter) {
		t.Fatalf("TalosConfig's CRD converts with strategy %q, want CABPT's webhook", s)
	}
	old := obj("bootstrap.cluster.x-k8s.io/v1alpha2", "TalosConfig", "from-v1alpha2", map[string]any{"generateType": "worker"})
	if err := c.Create(ctx, old); err != nil {
		t.Fatalf("a v1alpha2 TalosConfig was refused: %v", err)
	}
	got := obj("bootstrap.cluster.x-k8s.io/v1alpha3", "TalosConfig", old.GetName(), nil)
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatalf("the v1alpha2 TalosConfig cannot be read as v1alpha3: %v", err)
	}
	if g, _, _ := unstructured.NestedString(got.Object, "spec", "generateType"); g != "worker" {
		t.Errorf("read as v1alpha3: generateType %q, want worker", g)
	}
}

// TestCapmoxStartNamesLogTail: a missing capmox binary is named with its
// path; a capmox manager whose health port is taken and a CABPT manager
// that exits (its webhook port taken) fail Start with the manager's name,
// version and what took the port (CABPT's pid and log line); capmox's
// port lock is not held once it is gone.
func TestCapmoxStartNamesLogTail(t *testing.T) {
	t.Parallel()
	t.Run("missing", func(t *testing.T) {
		_, err := Start(&rest.Config{}, Options{Capmox: CapmoxV09, CABPT: true, assets: t.TempDir()})
		if !errors.Is(err, ErrMissingAssets) || !strings.Contains(err.Error(), "cabpt-"+version(testenv.CABPTModule)+"/cabpt-manager") {
			t.Errorf("want ErrMissingAssets naming cabpt-manager's path, got %v", err)
		}
		_, err = Start(&rest.Config{}, Options{Capmox: CapmoxV07, assets: t.TempDir()})
		if !errors.Is(err, ErrMissingAssets) || !strings.Contains(err.Error(), "capmox-"+version(testenv.CapmoxV07Module)+"/capmox-manager") {
			t.Errorf("want ErrMissingAssets naming capmox-manager's path, got %v", err)
		}
	})
	cfg, _ := testenv.StartAPIServer(t, testenv.APIServerOptions{CAPI: true, CAPIIPAM: true})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := func() (int, error) { return l.Addr().(*net.TCPAddr).Port, nil }
	for _, tc := range []struct {
		o    Options
		name string
	}{
		// In a network namespace of its own capmox's health port is
		// forwarded from the machine's, whose taken port Start names;
		// without, capmox exits on it.
		{Options{Capmox: CapmoxV09, ports: taken}, "capmox-manager " + version(testenv.CapmoxModule)},
		{Options{CABPT: true, ports: taken}, "cabpt-manager " + version(testenv.CABPTModule) + " (pid "},
	} {
		_, err := Start(cfg, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), "address already in use") {
			t.Errorf("want an error naming %q and its log line about the taken port, got %v", tc.name, err)
		}
	}
	release, err := lockPort(capmoxWebhookPort, portLockTimeout)
	if err != nil {
		t.Fatalf("capmox's port lock is still held after its manager exited: %v", err)
	}
	release()
}

// TestCapmoxManifests reads the CRDs and webhook configurations of every
// manager as Start installs them: capmox v0.9.0's and CABPT's CRDs convert
// through their webhook with the contract labels of their
// config/crd/kustomization.yaml, capmox v0.7.2's do not convert, and each
// webhook configuration carries its module's namePrefix and calls the
// manager's port.
func TestCapmoxManifests(t *testing.T) {
	t.Parallel()
	const base = "https://127.0.0.1:9443"
	for _, tc := range []struct {
		comp     component
		convert  bool
		labels   map[string]string
		webhooks []string
	}{
		{capmoxV09Component, true, map[string]string{"cluster.x-k8s.io/v1beta1": "v1alpha2", "cluster.x-k8s.io/v1beta2": "v1alpha2"},
			[]string{"capmox-mutating-webhook-configuration", "capmox-validating-webhook-configuration"}},
		{capmoxV07Component, false, map[string]string{"cluster.x-k8s.io/v1beta1": "v1alpha1"},
			[]string{"capmox-validating-webhook-configuration"}},
		{cabptComponent, true, map[string]string{"cluster.x-k8s.io/v1beta1": "v1alpha3"},
			[]string{"cabpt-validating-webhook-configuration"}},
		{coreComponent, true, nil, []string{"capi-mutating-webhook-configuration", "capi-validating-webhook-configuration"}},
		{ipamComponent, true, nil, []string{"capi-ipam-in-cluster-mutating-webhook-configuration", "capi-ipam-in-cluster-validating-webhook-configuration"}},
	} {
		t.Run(tc.comp.title(), func(t *testing.T) {
			crds, err := tc.comp.crds(base, []byte("ca"))
			if err != nil {
				t.Fatal(err)
			}
			for _, crd := range crds {
				converts := crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextv1.WebhookConverter &&
					*crd.Spec.Conversion.Webhook.ClientConfig.URL == base+"/convert"
				if converts != tc.convert {
					t.Errorf("%s: conversion %+v, want a webhook at %s/convert: %v", crd.Name, crd.Spec.Conversion, base, tc.convert)
				}
				for k, v := range tc.labels {
					if crd.Labels[k] != v {
						t.Errorf("%s: label %s=%q, want %q", crd.Name, k, crd.Labels[k], v)
					}
				}
			}
			objs, err := tc.comp.webhookConfigs(base, []byte("ca"))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range objs {
				names = append(names, o.GetName())
			}
			if strings.Join(names, ",") != strings.Join(tc.webhooks, ",") {
				t.Errorf("webhook configurations %v, want %v", names, tc.webhooks)
			}
		})
	}
}

// TestCapmoxManagerEnv: the managers' environment leaves out PROXMOX_*
// and takes the values Start sets over the test process's.
func TestCapmoxManagerEnv(t *testing.T) {
	t.Parallel()
	got := managerEnv([]string{"PATH=/bin", "PROXMOX_URL=https://pve", "PROXMOX_SECRET=s", "TMPDIR=/tmp", "PROXMOXX=1"},
		"TMPDIR=/x", "KUBECONFIG=/k")
	want := []string{"PATH=/bin", "PROXMOXX=1", "TMPDIR=/x", "KUBECONFIG=/k"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("managerEnv = %v, want %v", got, want)
	}
}
