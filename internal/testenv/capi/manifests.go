package capi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// configDir returns the config folder of the component's module (the parent
// of the CRD bases testenv.ModuleCRDDir finds).
func (c component) configDir() (string, error) {
	bases, err := testenv.ModuleCRDDir(c.module)
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(bases)), nil
}

// crds returns the component's CRDs with the labels and patches its
// config/crd/kustomization.yaml gives them, conversion webhooks calling
// base (https://127.0.0.1:port) and trusting caPEM.
func (c component) crds(base string, caPEM []byte) ([]*apiextv1.CustomResourceDefinition, error) {
	dir, err := c.configDir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("%s: no CRDs in %s/crd/bases", c.module, dir)
	}
	byName := map[string]*apiextv1.CustomResourceDefinition{}
	var out []*apiextv1.CustomResourceDefinition
	for _, f := range files {
		crds, err := readCRDFile(f)
		if err != nil {
			return nil, err
		}
		for _, crd := range crds {
			byName[crd.Name] = crd
			out = append(out, crd)
		}
	}
	k, err := readKustomization(filepath.Join(dir, "crd"))
	if err != nil {
		return nil, err
	}
	for _, crd := range out {
		addLabels(crd, k.CommonLabels)
	}
	for _, p := range k.patchFiles(filepath.Join(dir, "crd")) {
		if err := applyPatch(p, byName, base, caPEM); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readCRDFile returns the CRDs of file, read strictly, once per test
// binary (testenv.CachedCRDs); crds labels and patches the copies.
func readCRDFile(file string) ([]*apiextv1.CustomResourceDefinition, error) {
	return testenv.CachedCRDs("capi\x00"+file, func() ([]*apiextv1.CustomResourceDefinition, error) {
		docs, err := readDocs(file)
		if err != nil {
			return nil, err
		}
		var out []*apiextv1.CustomResourceDefinition
		for _, d := range docs {
			crd := &apiextv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(d, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			out = append(out, crd)
		}
		return out, nil
	})
}

// kustomization is what the tests read of a kustomization.yaml.
type kustomization struct {
	// NamePrefix is config/default's prefix of every name.
	NamePrefix string `json:"namePrefix"`
	// CommonLabels are put on every resource (capmox's and CABPT's
	// contract labels).
	CommonLabels map[string]string `json:"commonLabels"`
	Patches      []struct {
		Path string `json:"path"`
	} `json:"patches"`
	// PatchesStrategicMerge is the older list of patch files.
	PatchesStrategicMerge []string `json:"patchesStrategicMerge"`
	// The rest changes nothing the tests install: the resources are read
	// from the folder, and configurations teach kustomize name references.
	APIVersion     string   `json:"apiVersion"`
	Kind           string   `json:"kind"`
	Resources      []string `json:"resources"`
	Configurations []string `json:"configurations"`
}

// readKustomization reads dir/kustomization.yaml; a key the type above
// does not name is refused, so nothing the module configures is dropped
// unseen.
func readKustomization(dir string) (kustomization, error) {
	var k kustomization
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return k, err
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return k, fmt.Errorf("%s/kustomization.yaml: %w (extend internal/testenv/capi)", dir, err)
	}
	return k, nil
}

// patchFiles returns the files of both patch lists, below dir.
func (k kustomization) patchFiles(dir string) []string {
	var out []string
	for _, p := range k.Patches {
		out = append(out, filepath.Join(dir, p.Path))
	}
	for _, p := range k.PatchesStrategicMerge {
		out = append(out, filepath.Join(dir, p))
	}
	return out
}

// namePrefix is the prefix config/default/kustomization.yaml gives every
// name (capi-, capi-ipam-in-cluster-, capmox-, cabpt-). That file sets
// much else (namespace, deployments), so only this key is read.
func (c component) namePrefix() (string, error) {
	dir, err := c.configDir()
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "default", "kustomization.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var k struct {
		NamePrefix string `json:"namePrefix"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if k.NamePrefix == "" {
		return "", fmt.Errorf("%s sets no namePrefix", file)
	}
	return k.NamePrefix, nil
}

func addLabels(crd *apiextv1.CustomResourceDefinition, labels map[string]string) {
	for k, v := range labels {
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels[k] = v
	}
}

// applyPatch applies the CRD patch in file: its labels, and its conversion
// webhook pointed at base. A patch that sets anything else is refused by
// name, so nothing the module configures is dropped unseen.
func applyPatch(file string, byName map[string]*apiextv1.CustomResourceDefinition, base string, caPEM []byte) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	u := map[string]any{}
	if err := yaml.Unmarshal(data, &u); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	name, _, _ := unstructured.NestedString(u, "metadata", "name")
	crd, ok := byName[name]
	if !ok {
		return fmt.Errorf("%s patches CRD %q, which crd/bases does not define", file, name)
	}
	labels, _, _ := unstructured.NestedStringMap(u, "metadata", "labels")
	addLabels(crd, labels)
	// cert-manager's CA injection is done here: the conversion webhook
	// below trusts caPEM.
	annotations, _, _ := unstructured.NestedStringMap(u, "metadata", "annotations")
	for k := range annotations {
		if k != "cert-manager.io/inject-ca-from" {
			return fmt.Errorf("%s sets the annotation %s, which this test set-up does not apply: extend internal/testenv/capi", file, k)
		}
	}
	if err := only(file, u, "apiVersion", "kind", "metadata.name", "metadata.labels", "metadata.annotations", "spec.conversion"); err != nil {
		return err
	}
	conv, found, _ := unstructured.NestedMap(u, "spec", "conversion")
	if !found {
		return nil
	}
	path, _, _ := unstructured.NestedString(conv, "webhook", "clientConfig", "service", "path")
	url := base + path
	review, _, _ := unstructured.NestedStringSlice(conv, "webhook", "conversionReviewVersions")
	crd.Spec.Conversion = &apiextv1.CustomResourceConversion{
		Strategy: apiextv1.WebhookConverter,
		Webhook: &apiextv1.WebhookConversion{
			ClientConfig:             &apiextv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			ConversionReviewVersions: review,
		},
	}
	return nil
}

// only refuses a patch setting a field outside allowed (dotted paths; a
// path allows everything below it).
func only(file string, u map[string]any, allowed ...string) error {
	var walk func(prefix string, m map[string]any) error
	walk = func(prefix string, m map[string]any) error {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if slices.Contains(allowed, p) {
				continue
			}
			sub, ok := m[k].(map[string]any)
			if !ok || !isPrefix(allowed, p) {
				return fmt.Errorf("%s sets %s, which this test set-up does not apply: extend internal/testenv/capi", file, p)
			}
			if err := walk(p, sub); err != nil {
				return err
			}
		}
		return nil
	}
	return walk("", u)
}

func isPrefix(list []string, p string) bool {
	for _, x := range list {
		if strings.HasPrefix(x, p+".") {
			return true
		}
	}
	return false
}

// webhookConfigs returns the component's Mutating and Validating webhook
// configurations from config/webhook/manifests.yaml, renamed with its
// namePrefix and calling base with caPEM trusted.
func (c component) webhookConfigs(base string, caPEM []byte) ([]client.Object, error) {
	dir, err := c.configDir()
	if err != nil {
		return nil, err
	}
	prefix, err := c.namePrefix()
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "webhook", "manifests.yaml")
	docs, err := readDocs(file)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, d := range docs {
		var tm struct{ Kind string }
		if err := yaml.Unmarshal(d, &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		switch tm.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(d, m); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			m.Name = prefix + m.Name
			for i := range m.Webhooks {
				if err := toURL(file, &m.Webhooks[i].ClientConfig, base, caPEM); err != nil {
					return nil, err
				}
			}
			out = append(out, m)
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(d, v); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			v.Name = prefix + v.Name
			for i := range v.Webhooks {
				if err := toURL(file, &v.Webhooks[i].ClientConfig, base, caPEM); err != nil {
					return nil, err
				}
			}
			out = append(out, v)
		default:
			return nil, fmt.Errorf("%s holds a %q, not a webhook configuration", file, tm.Kind)
		}
	}
	return out, nil
}

func toURL(file string, cc *admissionv1.WebhookClientConfig, base string, caPEM []byte) error {
	if cc.Service == nil || cc.Service.Path == nil {
		return fmt.Errorf("%s: a webhook without a service path", file)
	}
	url := base + *cc.Service.Path
	cc.Service, cc.URL, cc.CABundle = nil, &url, caPEM
	return nil
}

// readDocs returns the non-empty YAML documents of file.
func readDocs(file string) ([][]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(bytes.TrimSpace(d)) > 0 && !isComment(d) {
			out = append(out, d)
		}
	}
}

// isComment says whether a document holds only comments.
func isComment(d []byte) bool {
	for _, line := range bytes.Split(d, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}

// ReadDocs returns the non-empty YAML documents of file that hold more
// than comments, for tests that install manifests of other modules.
func ReadDocs(file string) ([][]byte, error) { return readDocs(file) }
