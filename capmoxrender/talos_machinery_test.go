package capmoxrender_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// cloudRuntime is the runtime mode a Proxmox worker's Talos (the nocloud
// platform) validates its machine configuration in.
type cloudRuntime struct{}

func (cloudRuntime) String() string        { return "cloud" }
func (cloudRuntime) RequiresInstall() bool { return false }
func (cloudRuntime) InContainer() bool     { return false }

// TestTalosPatchesValidate: every pool scenario's TalosConfigTemplate
// patches apply, as JSON patches, to a worker configuration that Talos
// machinery v1.11.0 generates (the machinery CABPT v0.6.10 builds with),
// and Talos accepts the result: the kubelet's reservations, the registry
// mirrors and the installer image of a pool are configuration a worker
// boots with.
func TestTalosPatchesValidate(t *testing.T) {
	for _, s := range loadScenarios(t) {
		if !strings.HasPrefix(s.Name, "nodes-") {
			continue
		}
		for _, gen := range generations {
			t.Run(s.Name+"/"+string(gen), func(t *testing.T) {
				var tct *unstructured.Unstructured
				for _, u := range renderScenario(t, s, gen) {
					if u.GetKind() == "TalosConfigTemplate" {
						tct = u
						break
					}
				}
				patches, _, _ := unstructured.NestedSlice(tct.Object, "spec", "template", "spec", "configPatches")
				raw, err := json.Marshal(patches)
				if err != nil {
					t.Fatal(err)
				}
				worker := workerConfig(t)
				patch, err := configpatcher.LoadPatch(raw)
				if err != nil {
					t.Fatalf("Talos cannot read the patches: %v", err)
				}
				out, err := configpatcher.Apply(configpatcher.WithConfig(worker), []configpatcher.Patch{patch})
				if err != nil {
					t.Fatalf("the patches do not apply to a worker configuration: %v", err)
				}
				data, err := out.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := configloader.NewFromBytes(data)
				if err != nil {
					t.Fatalf("Talos cannot load the patched configuration: %v", err)
				}
				if _, err := cfg.Validate(cloudRuntime{}); err != nil {
					t.Fatalf("Talos refuses the patched configuration: %v", err)
				}
				if got := cfg.Machine().Kubelet().ExtraConfig()["systemReserved"]; got == nil {
					t.Errorf("the configuration lost the kubelet's reservations: %v", cfg.Machine().Kubelet().ExtraConfig())
				}
			})
		}
	}
}

// TestTalosPatchesValidateControl: the check above refuses what Talos
// refuses, so a pass means something: a mirror whose endpoints is a string
// does not load.
func TestTalosPatchesValidateControl(t *testing.T) {
	worker := workerConfig(t)
	patch, err := configpatcher.LoadPatch([]byte(`[{"op":"add","path":"/machine/registries","value":{"mirrors":{"ghcr.io":{"endpoints":"https://m"}}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := configpatcher.Apply(configpatcher.WithConfig(worker), []configpatcher.Patch{patch})
	if err == nil {
		var data []byte
		if data, err = out.Bytes(); err == nil {
			_, err = configloader.NewFromBytes(data)
		}
	}
	if err == nil {
		t.Fatal("Talos loaded a mirror whose endpoints is a string")
	}
}

// workerConfig is a worker configuration as Talos machinery generates it
// for a cluster, before CABPT applies a template's patches.
func workerConfig(t *testing.T) config.Provider {
	t.Helper()
	in, err := talosInput()
	if err != nil {
		t.Fatal(err)
	}
	worker, err := in.Config(machine.TypeWorker)
	if err != nil {
		t.Fatal(err)
	}
	return worker
}

// talosInput is generated once per test binary: generating it makes the
// cluster's CAs and keys, most of a subtest's time, and every subtest
// makes its own worker configuration from it.
var talosInput = sync.OnceValues(func() (*generate.Input, error) {
	return generate.NewInput("kubernetes-demo", "https://kubernetes-demo.tenant-demo.svc:6443", "1.35.2")
})
