package liveacl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Secret is an API token's secret value. Printing, formatting or
// marshalling it yields "[redacted]"; only Reveal gives the value.
type Secret string

const redacted = "[redacted]"

// String returns "[redacted]", never the secret.
func (Secret) String() string { return redacted }

// GoString returns "[redacted]" for %#v, never the secret.
func (Secret) GoString() string { return redacted }

// Format writes "[redacted]" for every verb.
func (Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalJSON writes "[redacted]".
func (Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// Reveal returns the value, for the one place that stores it.
func (s Secret) Reveal() string { return string(s) }

// TokenSecret is a token created by an apply, with what a controller needs
// to use it. The keys of its stored forms are url, token_id, token_secret
// and region.
type TokenSecret struct {
	URL     string `json:"url"`
	TokenID string `json:"token_id"`
	Secret  Secret `json:"token_secret"`
	Region  string `json:"region"`
	// Tenant is the tenant the token belongs to ("" for the platform's).
	Tenant string `json:"-"`
}

// SecretSink stores the secrets of new tokens. Check runs before an apply
// changes anything, so that a secret is never created without a place to
// keep it (PVE shows it once). Store returns where the secret went.
type SecretSink interface {
	Check() error
	Store(s TokenSecret) (location string, err error)
}

// ErrNoSecretSink reports that an apply would create tokens but has nowhere to store
// their secrets.
var ErrNoSecretSink = errors.New("new API tokens need a place for their secrets")

// SecretName is the Kubernetes-safe name of a token's secret, for example
// "proxmox-tenant-a-pve-csi" for tenant-a@pve!csi.
func SecretName(tokenID string) string {
	n := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(tokenID), "-"), "-")
	n = "proxmox-" + n
	if len(n) > 253 {
		n = strings.TrimRight(n[:253], "-")
	}
	return n
}

var (
	nonDNS       = regexp.MustCompile(`[^a-z0-9]+`)
	docSeparator = regexp.MustCompile(`(?m)^---\s*$`)
)

// DirSink writes one JSON file per token, <Dir>/<SecretName>.json, mode
// 0600, atomically (a temporary file renamed into place).
type DirSink struct {
	Dir string
}

// Check creates the directory (0700) and proves it is writable.
func (d DirSink) Check() error {
	if d.Dir == "" {
		return fmt.Errorf("cannot store token secrets: %w: name a directory", ErrNoSecretSink)
	}
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return fmt.Errorf("cannot store token secrets in %s: %w", d.Dir, err)
	}
	return probeWritable(d.Dir)
}

// Store writes the file and returns its path.
func (d DirSink) Store(s TokenSecret) (string, error) {
	body, err := json.MarshalIndent(map[string]string{"url": s.URL, "token_id": s.TokenID,
		"token_secret": s.Secret.Reveal(), "region": s.Region}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("cannot encode the secret of %s: %w", s.TokenID, err)
	}
	path := filepath.Join(d.Dir, SecretName(s.TokenID)+".json")
	if err := writeFileAtomic(path, append(body, '\n')); err != nil {
		return "", err
	}
	return path, nil
}

// ManifestSink keeps Kubernetes Secret manifests (v1, type Opaque, keys in
// stringData) in one multi-document YAML file, mode 0600, rewritten
// atomically. Secrets already in the file stay unless a new one has the
// same name.
type ManifestSink struct {
	Path      string
	Namespace string
}

type secretManifest struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   manifestMeta      `json:"metadata"`
	Type       string            `json:"type"`
	StringData map[string]string `json:"stringData"`
}

type manifestMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Check proves the file's directory is writable and the file, if present,
// holds Secret manifests.
func (m ManifestSink) Check() error {
	if m.Path == "" {
		return fmt.Errorf("cannot store token secrets: %w: name a manifest file", ErrNoSecretSink)
	}
	if _, err := m.read(); err != nil {
		return err
	}
	return probeWritable(filepath.Dir(m.Path))
}

// Store adds the secret's manifest and returns "<path>#<name>".
func (m ManifestSink) Store(s TokenSecret) (string, error) {
	docs, err := m.read()
	if err != nil {
		return "", err
	}
	name := SecretName(s.TokenID)
	labels := map[string]string{"app.kubernetes.io/managed-by": "pxsubstrate"}
	if s.Tenant != "" {
		labels["proxmox.cozystack.io/tenant"] = s.Tenant
	}
	docs[name] = secretManifest{APIVersion: "v1", Kind: "Secret", Type: "Opaque",
		Metadata: manifestMeta{Name: name, Namespace: m.Namespace, Labels: labels,
			Annotations: map[string]string{"proxmox.cozystack.io/token-id": s.TokenID}},
		StringData: map[string]string{"url": s.URL, "token_id": s.TokenID, "token_secret": s.Secret.Reveal(), "region": s.Region}}
	var buf bytes.Buffer
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		b, err := yaml.Marshal(docs[n])
		if err != nil {
			return "", fmt.Errorf("cannot encode the Secret manifest %s: %w", n, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	if err := writeFileAtomic(m.Path, buf.Bytes()); err != nil {
		return "", err
	}
	return m.Path + "#" + name, nil
}

// read returns the manifests already in the file by name.
func (m ManifestSink) read() (map[string]secretManifest, error) {
	out := map[string]secretManifest{}
	data, err := os.ReadFile(m.Path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the Secret manifests in %s: %w", m.Path, err)
	}
	for i, doc := range splitYAMLDocs(data) {
		var s secretManifest
		if err := yaml.UnmarshalStrict(doc, &s); err != nil || s.Kind != "Secret" || s.Metadata.Name == "" {
			return nil, fmt.Errorf("cannot add to %s: document %d is not a Secret manifest this tool wrote (%v); name another file", m.Path, i+1, err)
		}
		out[s.Metadata.Name] = s
	}
	return out, nil
}

func splitYAMLDocs(data []byte) [][]byte {
	var out [][]byte
	for _, part := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(part) != "" {
			out = append(out, []byte(part))
		}
	}
	return out
}

// writeFileAtomic writes data to path with mode 0600: a temporary file in
// the same directory is written, synced and renamed over path, so readers
// see the old content or the new one, never a part.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".pxsubstrate-probe-*")
	if err != nil {
		return fmt.Errorf("cannot store token secrets in %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
