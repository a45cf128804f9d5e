package credlint

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Kind is what a Secret is for.
type Kind string

const (
	// KindCapmoxEnv is the controller-wide capmox Secret (PROXMOX_* keys).
	KindCapmoxEnv Kind = "capmox"
	// KindCapmoxCluster is a ProxmoxCluster credentialsRef Secret (url, token, secret).
	KindCapmoxCluster Kind = "capmox-cluster"
	// KindCloud is a Proxmox CCM or CSI Secret (url, token_id, token_secret, region).
	KindCloud Kind = "ccm-csi"
	// KindUnknown holds none of the known key sets.
	KindUnknown Kind = "unknown"
)

// Severity of a finding; an Error makes `lint credentials` exit 1.
type Severity string

// The severities, from worst to best.
const (
	Error   Severity = "error"   // the Secret cannot work; exit 1
	Warning Severity = "warning" // works, but deserves a look
	OK      Severity = "ok"      // checked and fine
)

// Finding is one result. Message and Fix never contain a secret value.
type Finding struct {
	Secret   string   `json:"secret"`
	Key      string   `json:"key,omitempty"`
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix,omitempty"`
}

// Secret is a credentials Secret with its decoded data.
type Secret struct {
	Namespace, Name string
	Data            map[string]string
}

// ID is namespace/name, or name without a namespace.
func (s Secret) ID() string {
	if s.Namespace == "" {
		return s.Name
	}
	return s.Namespace + "/" + s.Name
}

// Kind tells which credentials the Secret holds by its keys.
func (s Secret) Kind() Kind {
	has := func(k string) bool { _, ok := s.Data[k]; return ok }
	switch {
	case has(cloudConfigKey):
		return KindCloudConfig
	case has("PROXMOX_URL") || has("PROXMOX_TOKEN") || has("PROXMOX_SECRET"):
		return KindCapmoxEnv
	case has("token_id") || has("token_secret") || has("region"):
		return KindCloud
	case has("token") || has("secret"):
		return KindCapmoxCluster
	case has("url"):
		return KindCloud
	}
	return KindUnknown
}

// ErrNotSecret reports that a document is not a v1 Secret.
var ErrNotSecret = errors.New("not a Secret")

// ReadSecrets reads v1 Secrets (YAML or JSON documents, or a List),
// decoding data (base64) and stringData. Every document is read: a syntax
// error in any of them is refused, naming the document. It reads r to
// its end: the caller bounds r (io.LimitReader, or a file read with a cap,
// as the CLI reads every input up to --max-input-size).
func ReadSecrets(r io.Reader) ([]Secret, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("cannot read the Secrets: %w", err)
	}
	docs, err := strictyaml.Documents(data)
	if err != nil {
		return nil, fmt.Errorf("cannot read the Secrets: %w", err)
	}
	var out []Secret
	for _, d := range docs {
		i := d.Index
		var m map[string]any
		if err := strictyaml.UnmarshalJSON(d.JSON, &m); err != nil {
			return nil, fmt.Errorf("cannot read document %d: %w", i, err)
		}
		u := &unstructured.Unstructured{Object: m}
		items := []unstructured.Unstructured{*u}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("cannot read list %d: %w", i, err)
			}
			items = l.Items
		}
		for _, it := range items {
			s, err := secretOf(&it)
			if err != nil {
				return nil, fmt.Errorf("cannot read document %d: %w", i, err)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func secretOf(u *unstructured.Unstructured) (Secret, error) {
	if u.GetKind() != "Secret" || u.GetAPIVersion() != "v1" {
		return Secret{}, fmt.Errorf("%w: %s %q is %s %s; give v1 Secrets", ErrNotSecret, u.GetKind(), u.GetName(), u.GetAPIVersion(), u.GetKind())
	}
	s := Secret{Namespace: u.GetNamespace(), Name: u.GetName(), Data: map[string]string{}}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return Secret{}, fmt.Errorf("Secret %s: data.%s is not base64: %w", s.ID(), k, err)
		}
		s.Data[k] = string(b)
	}
	str, _, _ := unstructured.NestedStringMap(u.Object, "stringData")
	for k, v := range str {
		s.Data[k] = v
	}
	return s, nil
}

var (
	tokenIDPattern = regexp.MustCompile(`^([^\s:/@!]+)@([A-Za-z][A-Za-z0-9._-]*)!([A-Za-z][A-Za-z0-9._-]*)$`)
	uuidPattern    = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// Lint checks each Secret and returns the findings in input order.
func Lint(secrets []Secret) []Finding {
	var out []Finding
	for _, s := range secrets {
		out = append(out, lintOne(s)...)
	}
	return out
}

// keys maps the role of a value to its key name in one Secret kind.
type keys struct{ url, token, secret string }

func lintOne(s Secret) []Finding {
	l := &linter{s: s}
	switch s.Kind() {
	case KindCapmoxEnv:
		l.capmox(keys{"PROXMOX_URL", "PROXMOX_TOKEN", "PROXMOX_SECRET"})
	case KindCapmoxCluster:
		l.capmox(keys{"url", "token", "secret"})
		if _, ok := s.Data["insecure"]; !ok {
			l.add("insecure", Warning, "InsecureByDefault", "the Secret has no insecure key, and capmox then skips TLS verification of the Proxmox API", `add insecure: "false" (and root_ca when the API certificate is not publicly trusted)`)
		}
	case KindCloud:
		l.cloud()
	case KindCloudConfig:
		l.cloudConfig()
	default:
		l.add("", Error, "UnknownSecret", "the Secret holds none of the known key sets", "a capmox Secret has PROXMOX_URL, PROXMOX_TOKEN and PROXMOX_SECRET; a CCM/CSI Secret has url, token_id, token_secret and region, or the upstream charts' config.yaml with a clusters list")
	}
	if len(l.out) == 0 {
		l.add("", OK, "OK", sprintf("%s credentials look right", s.Kind()), "")
	}
	return l.out
}

type linter struct {
	s   Secret
	out []Finding
	// tokenElsewhere: a cloud config cluster reads its credentials from
	// files or logs in with a password, so there are no token keys.
	tokenElsewhere bool
}

func (l *linter) add(key string, sev Severity, code, msg, fix string) {
	l.out = append(l.out, Finding{Secret: l.s.ID(), Key: key, Severity: sev, Code: code, Message: msg, Fix: fix})
}

func (l *linter) value(key string) (string, bool) {
	v, ok := l.s.Data[key]
	if !ok || strings.TrimSpace(v) == "" {
		l.add(key, Error, "MissingKey", "the Secret has no "+key, "add "+key+" to the Secret")
		return "", false
	}
	if v != strings.TrimSpace(v) {
		l.add(key, Error, "Whitespace", key+" has leading or trailing whitespace (often a newline from echo)", "write the value without it, e.g. with printf or kubectl create secret --from-literal")
	}
	v = strings.TrimSpace(v)
	if i := strings.IndexFunc(v, isControl); i >= 0 {
		l.add(key, Error, "ControlCharacter", sprintf("%s holds the control character 0x%02x at byte %d, which no HTTP header can carry", key, v[i], i+1),
			"write the value alone, as Proxmox VE showed it")
	}
	return v, true
}

// isControl reports the bytes no HTTP header value may hold: C0 controls
// (tab and newline among them) and DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func (l *linter) capmox(k keys) {
	if u, ok := l.value(k.url); ok {
		l.capmoxURL(k.url, u)
	}
	if t, ok := l.value(k.token); ok {
		l.tokenID(k.token, t, k.secret)
	}
	if sec, ok := l.value(k.secret); ok {
		l.tokenSecret(k.secret, sec, l.s.Data[k.token])
	}
}

func (l *linter) capmoxURL(key, raw string) {
	u, ok := l.parseURL(key, raw)
	if !ok {
		return
	}
	p := strings.TrimSuffix(u.Path, "/")
	switch {
	case strings.HasSuffix(p, "/api2/json"):
		l.add(key, Error, "DoubledAPIPath", sprintf("%s %q ends in /api2/json, which capmox appends itself: every call goes to /api2/json/api2/json and Proxmox answers 501", key, raw), sprintf("set %s to %s://%s", key, u.Scheme, u.Host))
	case p != "":
		l.add(key, Warning, "URLPath", sprintf("%s %q has a path; capmox appends /api2/json to it", key, raw), sprintf("use the bare %s://%s unless a proxy serves the API under that path", u.Scheme, u.Host))
	}
}

func (l *linter) cloud() {
	if raw, ok := l.value("url"); ok {
		if u, ok := l.parseURL("url", raw); ok {
			switch p := strings.TrimSuffix(u.Path, "/"); {
			case strings.HasSuffix(p, "/api2/json/api2/json"):
				l.add("url", Error, "DoubledAPIPath", sprintf("url %q holds /api2/json twice: every call of the CCM and CSI gets 501", raw), sprintf("set url to %s://%s/api2/json", u.Scheme, u.Host))
			case !strings.HasSuffix(p, "/api2/json"):
				l.add("url", Error, "MissingAPIPath", sprintf("url %q does not end in /api2/json: the CCM and CSI hand it to their Proxmox client unchanged, which does not append it", raw), sprintf("set url to %s://%s/api2/json", u.Scheme, u.Host))
			}
		}
	}
	if !l.tokenElsewhere {
		if t, ok := l.value("token_id"); ok {
			l.tokenID("token_id", t, "token_secret")
		}
		if sec, ok := l.value("token_secret"); ok {
			l.tokenSecret("token_secret", sec, l.s.Data["token_id"])
		}
	}
	if r, ok := l.value("region"); ok && strings.ContainsAny(r, " /") {
		l.add("region", Error, "BadRegion", sprintf("region %q becomes the topology.kubernetes.io/region label and cannot hold spaces or slashes", r), "use the Proxmox cluster name, such as pve-eu1")
	}
}

func (l *linter) parseURL(key, raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		l.add(key, Error, "BadURL", sprintf("%s %q is not an http(s) URL with a host", key, pveapi.RedactURL(raw)), "write it as https://pve.example:8006")
		return nil, false
	}
	if u.User != nil {
		l.add(key, Error, "URLUserinfo", sprintf("%s %q carries user information: the client sends it as basic authentication to whoever answers, and it shows wherever the URL is logged", key, pveapi.RedactURL(raw)),
			sprintf("set %s to %s://%s and keep the credentials in the token keys", key, u.Scheme, u.Host))
		return nil, false
	}
	if u.Scheme == "http" {
		l.add(key, Warning, "PlainHTTP", key+" uses http: the token travels in clear text", "use https://<host>:8006")
	}
	return u, true
}

func (l *linter) tokenID(key, v, secretKey string) {
	m := tokenIDPattern.FindStringSubmatch(v)
	switch {
	case uuidPattern.MatchString(v):
		l.add(key, Error, "SecretInTokenID", key+" holds a UUID, which is the token secret, not its id", sprintf("put user@realm!tokenid in %s and the UUID in %s", key, secretKey))
	case strings.HasPrefix(v, "PVEAPIToken"):
		l.add(key, Error, "HeaderInTokenID", key+" holds an Authorization header, not a token id", sprintf("keep only user@realm!tokenid in %s and the secret in %s", key, secretKey))
	case m != nil:
		if m[1]+"@"+m[2] == "root@pam" {
			l.add(key, Warning, "RootToken", key+" is a token of root@pam, which bypasses every ACL check", "use a dedicated user whose token has only the roles it needs (e.g. on /pool/<pool>)")
		}
	case !strings.Contains(v, "!"):
		l.add(key, Error, "UserNotToken", key+" is a user or a bare name, not an API token id (it has no !tokenid)", "write the full token id user@realm!tokenid, e.g. capmox@pve!capi")
	case !strings.Contains(strings.SplitN(v, "!", 2)[0], "@"):
		l.add(key, Error, "TokenWithoutUser", key+" is a token id without its user@realm", "write the full token id user@realm!tokenid, e.g. capmox@pve!capi")
	default:
		l.add(key, Error, "BadTokenID", key+" is not of the form user@realm!tokenid", "write the full token id, e.g. capmox@pve!capi")
	}
}

func (l *linter) tokenSecret(key, v, tokenID string) {
	switch {
	case v == strings.TrimSpace(tokenID):
		l.add(key, Error, "SecretIsTokenID", key+" repeats the token id", "put the UUID Proxmox printed when the token was created")
	case tokenIDPattern.MatchString(v):
		l.add(key, Error, "TokenIDInSecret", key+" holds a token id, not its secret", "swap the values: the id is user@realm!tokenid, the secret a UUID")
	case !uuidPattern.MatchString(v):
		l.add(key, Warning, "SecretNotUUID", key+" is not a UUID, the form Proxmox gives token secrets", "check that the whole secret was copied")
	}
}

// HasErrors reports whether any finding is an Error.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == Error {
			return true
		}
	}
	return false
}

// SortedKeys returns a Secret's key names (never the values), sorted.
func (s Secret) SortedKeys() []string {
	ks := make([]string, 0, len(s.Data))
	for k := range s.Data {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// sprintf is fmt.Sprintf whose %q quotes a string as termsafe.Quote does:
// a value from the Secret is named in a finding, never echoed whole.
func sprintf(format string, args ...any) string {
	return fmt.Sprintf(format, termsafe.QuoteArgs(args...)...)
}
