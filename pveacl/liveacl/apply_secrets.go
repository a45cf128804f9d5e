package liveacl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/capread"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
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
	// Capmox marks a cluster-api provider token: its stored form is what a
	// ProxmoxCluster credentialsRef names (url without /api2/json, token,
	// secret, insecure "false").
	Capmox bool `json:"-"`
}

// data is the stored form: url, token_id, token_secret and region for the
// CCM and CSI; for capmox also token, secret and insecure, with url the
// bare address capmox appends /api2/json to.
func (s TokenSecret) data() map[string]string {
	m := map[string]string{"url": s.URL, "token_id": s.TokenID, "token_secret": s.Secret.Reveal(), "region": s.Region}
	if s.Capmox {
		m["url"] = strings.TrimSuffix(strings.TrimSuffix(s.URL, "/"), "/api2/json")
		m["token"], m["secret"], m["insecure"] = s.TokenID, s.Secret.Reveal(), "false"
	}
	return m
}

// SecretSink stores the secrets of new tokens. Check runs before an apply
// changes anything, with the ids of the tokens it will create, so that a
// secret is never created without a place to keep it (PVE shows it once):
// it fails when one of them already has a stored secret. Store returns
// where the secret went and never replaces a stored secret.
type SecretSink interface {
	Check(tokenIDs []string) error
	Store(s TokenSecret) (location string, err error)
}

// ErrNoSecretSink reports that an apply would create tokens but has nowhere to store
// their secrets.
var ErrNoSecretSink = errors.New("new API tokens need a place for their secrets")

// ErrSecretExists reports that a token's secret is already stored where a
// new one would go. The sinks never overwrite a stored secret: a token
// whose secret is stored is in use.
var ErrSecretExists = errors.New("a secret of this token is already stored")

// maxSecretName is the longest Kubernetes object name (and fits a file
// name of 255 bytes with the .json suffix).
const maxSecretName = 253

// SecretName is the Kubernetes-safe name of a token's secret, for example
// "proxmox-alpha-40pve-21csi" for alpha@pve!csi. Lower-case letters and
// digits stay; every other byte b becomes "-" and b's two lower-case hex
// digits ("@" is -40, "!" -21, "-" -2d, "_" -5f, "A" -41). A dash always
// starts such a triple, so the name decodes to exactly one token id: two
// tokens never share a name.
func SecretName(tokenID string) string {
	var b strings.Builder
	b.WriteString("proxmox-")
	for i := 0; i < len(tokenID); i++ {
		c := tokenID[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "-%02x", c)
	}
	return b.String()
}

// secretNames returns the names of the tokens' secrets, or an error naming
// a token whose name would be too long for Kubernetes or a file.
func secretNames(tokenIDs []string) ([]string, error) {
	out := make([]string, len(tokenIDs))
	for i, id := range tokenIDs {
		out[i] = SecretName(id)
		if len(out[i]) > maxSecretName {
			return nil, fmt.Errorf("cannot store the secret of %s: its name %s has more than %d characters; use a shorter user or token name", id, out[i], maxSecretName)
		}
	}
	return out, nil
}

var (
	nonDNS = regexp.MustCompile(`[^a-z0-9]+`)
)

// legacySecretName is the name earlier versions gave a token's secret:
// lower-cased, every run of other characters folded into one "-", trimmed,
// cut to 253 characters. It is not injective (a-b@pve!csi and a_b@pve!csi
// share proxmox-a-b-pve-csi), so a secret found under it is the token's
// only when the token id stored with it says so.
func legacySecretName(tokenID string) string {
	n := "proxmox-" + strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(tokenID), "-"), "-")
	if len(n) > maxSecretName {
		n = strings.TrimRight(n[:maxSecretName], "-")
	}
	return n
}

// legacyError says that an earlier version stored the token's secret under
// its former name, and how to move it to the name this version uses.
func legacyError(tokenID, old, current string) error {
	return fmt.Errorf("cannot store the secret of %s: %w in %s, under the name earlier versions used; it is the only copy of that token's secret: "+
		"if the token still exists, rename it to %s, the name this version uses; if the token was deleted, move it away", tokenID, ErrSecretExists, old, current)
}

// DirSink writes one JSON file per token, <Dir>/<SecretName>.json, mode
// 0600, atomically (a temporary file linked into place, which fails when
// the file exists: a stored secret is never replaced).
type DirSink struct {
	Dir string
}

// Check creates the directory (0700), proves it is writable and that no
// file of the tokens exists yet.
func (d DirSink) Check(tokenIDs []string) error {
	if d.Dir == "" {
		return fmt.Errorf("cannot store token secrets: %w: name a directory", ErrNoSecretSink)
	}
	names, err := secretNames(tokenIDs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return fmt.Errorf("cannot store token secrets in %s: %w", d.Dir, err)
	}
	for i, n := range names {
		if err := d.stored(tokenIDs[i], n); err != nil {
			return err
		}
	}
	return probeWritable(d.Dir)
}

// stored fails when a file of the token exists: under its name, or under
// its former name holding that token's id (or unreadable, so it may).
func (d DirSink) stored(tokenID, name string) error {
	path := filepath.Join(d.Dir, name+".json")
	if _, err := os.Lstat(path); err == nil {
		return existsError(tokenID, path)
	}
	old := filepath.Join(d.Dir, legacySecretName(tokenID)+".json")
	data, err := capread.File(old, maxSecretFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var f struct {
		TokenID string `json:"token_id"`
	}
	if err != nil || json.Unmarshal(data, &f) != nil || f.TokenID == tokenID {
		return legacyError(tokenID, old, path)
	}
	return nil // another token's, whose name folded to the same
}

// existsError says which stored secret is in the way and what to do.
func existsError(tokenID, where string) error {
	return fmt.Errorf("cannot store the secret of %s: %w in %s; it is the only copy of that token's secret: move it away if the token was deleted, or name another place for new secrets", tokenID, ErrSecretExists, where)
}

// Store writes the file and returns its path.
func (d DirSink) Store(s TokenSecret) (string, error) {
	body, err := json.MarshalIndent(s.data(), "", "  ")
	if err != nil {
		return "", fmt.Errorf("cannot encode the secret of %s: %w", s.TokenID, err)
	}
	names, err := secretNames([]string{s.TokenID})
	if err != nil {
		return "", err
	}
	if err := d.stored(s.TokenID, names[0]); err != nil {
		return "", err
	}
	path := filepath.Join(d.Dir, names[0]+".json")
	if err := writeFileExclusive(path, append(body, '\n')); err != nil {
		if errors.Is(err, os.ErrExist) {
			return "", existsError(s.TokenID, path)
		}
		return "", err
	}
	return path, nil
}

// ManifestSink keeps Kubernetes Secret manifests (v1, type Opaque, keys in
// stringData) in one multi-document YAML file, mode 0600, rewritten
// atomically. Secrets already in the file stay; a new secret whose name is
// taken is refused (ErrSecretExists).
//
// The file is read before it is added to, up to 8 MiB.
type ManifestSink struct {
	Path      string
	Namespace string
}

// maxManifestsBytes is the largest --secret-manifests file ManifestSink
// reads: the manifests of tens of thousands of tokens; a larger file, or
// a device that never ends, is no file this tool wrote and is refused.
const maxManifestsBytes = 8 << 20

// maxSecretFileBytes bounds the read of a secret file DirSink wrote under
// an earlier name: one token's JSON, a few hundred bytes. A larger file is
// not one it wrote, and is reported as in the way.
const maxSecretFileBytes = 64 << 10

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
// holds Secret manifests, none of them for the tokens.
func (m ManifestSink) Check(tokenIDs []string) error {
	if m.Path == "" {
		return fmt.Errorf("cannot store token secrets: %w: name a manifest file", ErrNoSecretSink)
	}
	names, err := secretNames(tokenIDs)
	if err != nil {
		return err
	}
	docs, err := m.read()
	if err != nil {
		return err
	}
	for i, n := range names {
		if err := m.stored(docs, tokenIDs[i], n); err != nil {
			return err
		}
	}
	return probeWritable(filepath.Dir(m.Path))
}

// stored fails when the file holds a Secret of the token: under its name,
// or under its former name with that token's id.
func (m ManifestSink) stored(docs map[string]secretManifest, tokenID, name string) error {
	if _, ok := docs[name]; ok {
		return existsError(tokenID, m.Path+"#"+name)
	}
	old := legacySecretName(tokenID)
	if d, ok := docs[old]; ok && d.StringData["token_id"] == tokenID {
		return legacyError(tokenID, m.Path+"#"+old, m.Path+"#"+name)
	}
	return nil
}

// Store adds the secret's manifest and returns "<path>#<name>".
func (m ManifestSink) Store(s TokenSecret) (string, error) {
	docs, err := m.read()
	if err != nil {
		return "", err
	}
	names, err := secretNames([]string{s.TokenID})
	if err != nil {
		return "", err
	}
	name := names[0]
	if err := m.stored(docs, s.TokenID, name); err != nil {
		return "", err
	}
	labels := map[string]string{"app.kubernetes.io/managed-by": "pxsubstrate"}
	if s.Tenant != "" {
		labels["proxmox.cozystack.io/tenant"] = s.Tenant
	}
	docs[name] = secretManifest{APIVersion: "v1", Kind: "Secret", Type: "Opaque",
		Metadata: manifestMeta{Name: name, Namespace: m.Namespace, Labels: labels,
			Annotations: map[string]string{"proxmox.cozystack.io/token-id": s.TokenID}},
		StringData: s.data()}
	body, err := encodeManifests(docs)
	if err != nil {
		return "", err
	}
	if err := writeFileAtomic(m.Path, body); err != nil {
		return "", err
	}
	return m.Path + "#" + name, nil
}

// encodeManifests writes the manifests sorted by name, as one
// multi-document YAML file.
func encodeManifests(docs map[string]secretManifest) ([]byte, error) {
	var buf bytes.Buffer
	for i, n := range slices.Sorted(maps.Keys(docs)) {
		b, err := yaml.Marshal(docs[n])
		if err != nil {
			return nil, fmt.Errorf("cannot encode the Secret manifest %s: %w", n, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// read returns the manifests already in the file by name.
func (m ManifestSink) read() (map[string]secretManifest, error) {
	out := map[string]secretManifest{}
	data, err := capread.File(m.Path, maxManifestsBytes)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the Secret manifests in %s: %w", m.Path, err)
	}
	docs, err := strictyaml.Documents(data)
	if de := (*strictyaml.DocumentError)(nil); errors.As(err, &de) {
		return nil, fmt.Errorf("cannot add to %s: document %d is not a Secret manifest this tool wrote (%v); name another file", m.Path, de.Index, de.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot add to %s: it is not the Secret manifests this tool wrote (%v); name another file", m.Path, err)
	}
	for _, d := range docs {
		var s secretManifest
		if err := strictyaml.UnmarshalJSON(d.JSON, &s); err != nil || s.Kind != "Secret" || s.Metadata.Name == "" {
			return nil, fmt.Errorf("cannot add to %s: document %d is not a Secret manifest this tool wrote (%v); name another file", m.Path, d.Index, err)
		}
		out[s.Metadata.Name] = s
	}
	return out, nil
}

// writeFileAtomic writes data to path with mode 0600: a temporary file in
// the same directory is written, synced and renamed over path, so readers
// see the old content or the new one, never a part.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// writeTemp writes data, mode 0600, to a synced temporary file beside path
// and returns its name.
func writeTemp(path string, data []byte) (name string, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("cannot write %s: %w", path, err)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return "", err
	}
	if _, err = f.Write(data); err != nil {
		return "", err
	}
	if err = f.Sync(); err != nil {
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// writeFileExclusive writes data to path with mode 0600 unless path exists
// (then the error wraps os.ErrExist): a temporary file is written and
// synced, then hard-linked to path, which fails rather than replace.
func writeFileExclusive(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("cannot write %s: %w", path, os.ErrExist)
		}
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
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
