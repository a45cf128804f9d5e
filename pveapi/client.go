package pveapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// DefaultTimeout bounds one request, its answer read whole, when
// Config.Timeout is 0.
const DefaultTimeout = 2 * time.Minute

// MaxResponseBytes is the largest answer a client reads, when
// Config.MaxResponseBytes is 0: 16 MiB. The largest answer this module
// reads, /cluster/resources of a cluster with 10,000 guests, is about
// 4 MiB; a server that sends more (or an endless body) gets
// ErrResponseTooLarge instead of the caller's memory.
const MaxResponseBytes = 16 << 20

// ErrResponseTooLarge is returned when an answer exceeds the cap.
var ErrResponseTooLarge = errors.New("the Proxmox VE API's answer exceeds the response cap")

// ErrRedirect is returned when the API answers with a redirect to another
// scheme or host: the token is never sent there.
var ErrRedirect = errors.New("redirect to another scheme or host refused")

// ErrConfig marks a Config that New refuses; the message names the input
// (Config.Names) and what to write instead.
var ErrConfig = errors.New("cannot use these Proxmox VE API settings")

// ErrPlainHTTP marks the refusal of an http:// URL without AllowPlainHTTP;
// it is an ErrConfig too.
var ErrPlainHTTP = errors.New("plain HTTP refused")

// configError is a refused Config: its message alone, matching ErrConfig
// and its kind through errors.Is.
type configError struct {
	msg  string
	kind error
}

func (e *configError) Error() string   { return e.msg }
func (e *configError) Unwrap() []error { return []error{ErrConfig, e.kind} }

// refuse builds a configError; a %q of an input (a URL, a token id) is
// cut as termsafe.Quote cuts it.
func refuse(kind error, format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, termsafe.QuoteArgs(args...)...), kind: kind}
}

// Config is how a client reaches one Proxmox VE API with an API token.
// Every Proxmox client of this module is built from one, by New.
type Config struct {
	// URL is the address of a node, https://HOST:8006; /api2/json is
	// appended (a URL that ends in it is taken as is).
	URL string
	// TokenID is USER@REALM!TOKEN and Secret the token's secret.
	TokenID, Secret string
	// CAPEM holds PEM CA certificates trusted besides the system roots.
	CAPEM []byte
	// InsecureSkipVerify turns TLS verification off; it excludes CAPEM.
	InsecureSkipVerify bool
	// AllowPlainHTTP lets an http:// URL carry the token (a test API on
	// the same host); without it such a URL is refused.
	AllowPlainHTTP bool
	// Timeout bounds each request with its answer; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes caps each answer; 0 means MaxResponseBytes.
	MaxResponseBytes int64
	// Transport, when set, carries the requests instead of a TLS
	// transport built from CAPEM and InsecureSkipVerify (an in-process
	// test server); the redirect rule, timeout and cap still apply.
	Transport http.RoundTripper
	// Names are the names of the inputs the fields came from, used in
	// error messages: "--url" and "--token-id" on the command line, a
	// Secret's keys in the controller. Empty names read "url", "token_id"
	// and "root_ca".
	Names Names
}

// Names spells Config's inputs in messages.
type Names struct {
	URL, TokenID, CA, Insecure string
	// Secret names where the secret came from, such as
	// "--token-secret-file admin.secret"; empty reads "the token secret".
	Secret string
}

func (n Names) or() Names {
	if n.URL == "" {
		n.URL = "url"
	}
	if n.TokenID == "" {
		n.TokenID = "token_id"
	}
	if n.CA == "" {
		n.CA = "root_ca"
	}
	if n.Insecure == "" {
		n.Insecure = "skipping TLS verification"
	}
	if n.Secret == "" {
		n.Secret = "the token secret"
	}
	return n
}

// Endpoint returns the API base URL of c.URL (ending in /api2/json), or
// an error naming the input and what to write instead. A password in the
// URL never reaches the message.
func (c Config) Endpoint() (string, error) {
	names := c.Names.or()
	shown := RedactURL(c.URL)
	u, err := url.Parse(strings.TrimSpace(c.URL))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", refuse(ErrConfig, "%s %q is not an API address: use https://HOST:8006", names.URL, shown)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", refuse(ErrConfig, "%s %q carries a query, fragment or user: use https://HOST:8006 and give the token separately", names.URL, shown)
	}
	switch strings.TrimRight(u.Path, "/") {
	case "", "/api2/json":
	default:
		return "", refuse(ErrConfig, "%s %q has the path %q: use https://HOST:8006 (/api2/json is appended)", names.URL, shown, u.Path)
	}
	u.Path = "/api2/json"
	return u.String(), nil
}

// New checks cfg and returns a go-proxmox client that sends cfg's token
// only to cfg's API: TLS verified against the system roots and CAPEM
// (unless InsecureSkipVerify), an http:// URL refused without
// AllowPlainHTTP, no redirect followed to another scheme or host, every
// request bounded by Timeout and every answer by MaxResponseBytes, and
// go-proxmox's log (whose debug lines carry bodies) dropped. Errors name
// the input (Config.Names) and never hold the secret: a token id is shown
// through RedactTokenID.
func New(cfg Config) (*proxmox.Client, error) {
	hc, base, err := cfg.httpClient()
	if err != nil {
		return nil, err
	}
	return proxmox.NewClient(base, proxmox.WithHTTPClient(hc), proxmox.WithAPIToken(cfg.TokenID, cfg.Secret),
		proxmox.WithLogger(silent{}), proxmox.WithUserAgent("pxsubstrate")), nil
}

// Check refuses what New would refuse before any secret is needed: the
// URL, plain HTTP, the token id and the TLS settings.
func (cfg Config) Check() error {
	_, _, err := cfg.check()
	return err
}

func (cfg Config) check() (string, *tls.Config, error) {
	names := cfg.Names.or()
	base, err := cfg.Endpoint()
	if err != nil {
		return "", nil, err
	}
	if strings.HasPrefix(base, "http://") && !cfg.AllowPlainHTTP {
		return "", nil, refuse(ErrPlainHTTP, "%s %q is plain HTTP: the API token would cross the network unencrypted; use https://", names.URL, base)
	}
	if !pveacl.IsTokenID(cfg.TokenID) {
		return "", nil, refuse(ErrConfig, "%s %q is not a token id: use USER@REALM!TOKEN", names.TokenID, RedactTokenID(cfg.TokenID))
	}
	tc, err := cfg.tlsConfig(names)
	return base, tc, err
}

func (cfg Config) httpClient() (*http.Client, string, error) {
	base, tc, err := cfg.check()
	if err != nil {
		return nil, "", err
	}
	if cfg.Secret == "" {
		return nil, "", refuse(ErrConfig, "the token secret of %s is empty", RedactTokenID(cfg.TokenID))
	}
	if err := checkSecret(cfg.Secret, cfg.Names.or().Secret); err != nil {
		return nil, "", err
	}
	rt := cfg.Transport
	if rt == nil {
		rt = &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tc, ForceAttemptHTTP2: true,
			TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 90 * time.Second, MaxIdleConnsPerHost: 4}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := cfg.MaxResponseBytes
	if limit <= 0 {
		limit = MaxResponseBytes
	}
	return &http.Client{Transport: capped{next: rt, limit: limit}, Timeout: timeout, CheckRedirect: sameOrigin}, base, nil
}

// checkSecret refuses a secret with a control character (a tab, a
// newline, an escape, DEL), which no HTTP header may carry, naming where
// the secret came from and the byte, never the secret: without it the
// request fails in net/http with 'invalid header field value for
// "Authorization"', which says nothing of the secret.
func checkSecret(secret, name string) error {
	i := strings.IndexFunc(secret, func(r rune) bool { return r < 0x20 || r == 0x7f })
	if i < 0 {
		return nil
	}
	return refuse(ErrConfig, "%s holds the control character 0x%02x at byte %d of the secret: an API token secret is printable text (Proxmox VE's are UUIDs), and no request can carry it; write the secret alone, as Proxmox VE showed it",
		name, secret[i], i+1)
}

func (cfg Config) tlsConfig(names Names) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case cfg.InsecureSkipVerify && len(cfg.CAPEM) > 0:
		return nil, refuse(ErrConfig, "%s and %s exclude each other: keep %s", names.CA, names.Insecure, names.CA)
	case cfg.InsecureSkipVerify:
		tc.InsecureSkipVerify = true
	case len(cfg.CAPEM) > 0:
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(cfg.CAPEM) {
			return nil, refuse(ErrConfig, "%s holds no PEM certificate", names.CA)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// sameOrigin follows a redirect only within the API's scheme and host
// (port included): a redirect elsewhere would take the token with it.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("%w: %s answered with a redirect to %s; the API token is not sent there: point the URL at the API itself",
			ErrRedirect, first.Scheme+"://"+first.Host, RedactURL(req.URL.Scheme+"://"+req.URL.Host+req.URL.Path))
	}
	if len(via) >= 10 {
		return fmt.Errorf("%w: stopped after 10 redirects", ErrRedirect)
	}
	return nil
}

// capped bounds every answer's body.
type capped struct {
	next  http.RoundTripper
	limit int64
}

func (c capped) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	what := req.Method + " " + req.URL.Path
	if res.ContentLength > c.limit {
		res.Body.Close()
		return nil, tooLarge(what, c.limit)
	}
	res.Body = &cappedBody{ReadCloser: res.Body, left: c.limit, limit: c.limit, what: what}
	return res, nil
}

type cappedBody struct {
	io.ReadCloser
	left, limit int64
	what        string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, tooLarge(b.what, b.limit)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func tooLarge(what string, limit int64) error {
	return fmt.Errorf("%w: the answer to %s is larger than %d MiB (pveapi.MaxResponseBytes); no Proxmox VE answer this module reads is that large, so the server is not a Proxmox VE API or is misbehaving",
		ErrResponseTooLarge, what, limit>>20)
}

// RedactTokenID shows a token id without anything after its first '=':
// "user@pve!id=SECRET", a secret pasted into the id, prints as
// "user@pve!id=REDACTED".
func RedactTokenID(id string) string {
	if i := strings.IndexByte(id, '='); i >= 0 {
		return id[:i] + "=REDACTED"
	}
	return id
}

// silent drops go-proxmox's log lines: at debug level they carry
// response bodies, token secrets included.
type silent struct{}

func (silent) Debugf(string, ...any) {}
func (silent) Errorf(string, ...any) {}
func (silent) Infof(string, ...any)  {}
func (silent) Warnf(string, ...any)  {}
