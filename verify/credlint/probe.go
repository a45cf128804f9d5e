package credlint

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Prober asks the Proxmox API for its version with a Secret's token. Client
// verifies TLS (its zero value uses the system roots); never turn that off.
type Prober struct {
	Client  *http.Client
	Timeout time.Duration
}

// endpoint is where the consumer of the Secret would send GET /version: capmox
// appends /api2/json to its URL, the CCM and CSI use theirs as written.
func endpoint(s Secret) (u, id, secret, key string, err error) {
	switch s.Kind() {
	case KindCapmoxEnv:
		u, err = url.JoinPath(strings.TrimSpace(s.Data["PROXMOX_URL"]), "api2", "json", "version")
		return u, s.Data["PROXMOX_TOKEN"], s.Data["PROXMOX_SECRET"], "PROXMOX_URL", err
	case KindCapmoxCluster:
		u, err = url.JoinPath(strings.TrimSpace(s.Data["url"]), "api2", "json", "version")
		return u, s.Data["token"], s.Data["secret"], "url", err
	case KindCloud:
		u, err = url.JoinPath(strings.TrimSpace(s.Data["url"]), "version")
		return u, s.Data["token_id"], s.Data["token_secret"], "url", err
	case KindCloudConfig:
		cl, ok := singleCluster(s)
		if !ok {
			return "", "", "", cloudConfigKey, errors.New("the probe takes a config.yaml with one cluster and an inline token")
		}
		u, err = url.JoinPath(strings.TrimSpace(cl.URL), "version")
		return u, cl.TokenID, cl.TokenSecret, cloudConfigKey + ":clusters[0].url", err
	}
	return "", "", "", "", errors.New("the Secret holds no Proxmox credentials")
}

// Probe returns one finding: OK with the PVE version, or what failed and
// what to do. The token secret is sent only in the Authorization header.
func (p Prober) Probe(ctx context.Context, s Secret) Finding {
	f := Finding{Secret: s.ID(), Code: "Probe"}
	u, id, secret, key, err := endpoint(s)
	f.Key = key
	var ue *url.Error
	switch {
	case errors.As(err, &ue):
		// url.Error repeats the URL, which may hold a password.
		return fail(f, "ProbeImpossible", cutf("cannot probe: %s does not parse as a URL", key), "fix the findings above first")
	case err != nil:
		return fail(f, "ProbeImpossible", cutf("cannot probe: %v", err), "fix the findings above first")
	}
	if parsed, perr := url.Parse(u); perr != nil || parsed.User != nil {
		return fail(f, "ProbeImpossible", cutf("cannot probe: %s carries user information, which would be sent to the API", key), "fix the findings above first")
	}
	if strings.ContainsFunc(strings.TrimSpace(id)+strings.TrimSpace(secret), isControl) {
		return fail(f, "ProbeImpossible", "cannot probe: the token id or secret holds a control character, which no request can carry", "fix the findings above first")
	}
	timeout := p.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(f, "ProbeImpossible", cutf("cannot build a request for %s", u), "fix the URL")
	}
	req.Header.Set("Authorization", "PVEAPIToken="+strings.TrimSpace(id)+"="+strings.TrimSpace(secret))
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return transportFailure(f, u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return answer(f, s.Kind(), u, resp, body)
}

func fail(f Finding, code, msg, fix string) Finding {
	f.Severity, f.Code, f.Message, f.Fix = Error, code, msg, fix
	return f
}

func transportFailure(f Finding, u string, err error) Finding {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &unknownCA):
		return fail(f, "TLSUntrusted", cutf("GET %s: the API certificate is not signed by a trusted CA", u), "pass the CA of the Proxmox API (--ca-file) or give the API a trusted certificate; TLS verification stays on")
	case errors.As(err, &hostname):
		return fail(f, "TLSHostname", cutf("GET %s: the API certificate does not name this host", u), "use the host name the certificate names")
	}
	return fail(f, "Unreachable", cutf("GET %s: %s", u, err.Error()), "check the host, port (8006) and the network path from the management cluster")
}

func answer(f Finding, kind Kind, u string, resp *http.Response, body []byte) Finding {
	switch resp.StatusCode {
	case http.StatusOK:
		var v struct {
			Data struct {
				Version string `json:"version"`
				Release string `json:"release"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &v); err != nil || v.Data.Version == "" {
			return fail(f, "NotProxmox", cutf("GET %s answered 200 without a Proxmox version", u), "point the URL at the Proxmox API (port 8006)")
		}
		f.Severity, f.Code, f.Message = OK, "ProbeOK", cutf("GET %s: Proxmox VE %s accepts the token", u, v.Data.Version)
		return f
	case http.StatusUnauthorized:
		return fail(f, "TokenRejected", cutf("GET %s answered 401: the API rejected the token", u), "check the token id and secret, that the token exists and has not expired")
	case http.StatusNotImplemented, http.StatusNotFound:
		fix := "use the bare https://host:8006: capmox appends /api2/json"
		if kind == KindCloud || kind == KindCloudConfig {
			fix = "end the url in /api2/json: https://host:8006/api2/json"
		}
		return fail(f, "WrongAPIPath", cutf("GET %s answered %d: the API path is wrong", u, resp.StatusCode), fix)
	}
	return fail(f, "ProbeFailed", cutf("GET %s answered %s", u, resp.Status), "check the Proxmox API logs (pveproxy)")
}

// cutf prints every string argument cut (termsafe.CutArgs): the URL comes
// from the Secret, the version and status from whoever answered.
func cutf(format string, args ...any) string {
	return fmt.Sprintf(format, termsafe.CutArgs(args...)...)
}
