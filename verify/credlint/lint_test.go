package credlint_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/verify/credlint"
)

const goodSecret = "5f1c1e9a-8d8b-4a5e-9c1b-2f0e6b7a9d31"

func codes(fs []credlint.Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Key+":"+f.Code)
	}
	return out
}

func TestLint(t *testing.T) {
	cases := map[string]struct {
		reason string
		data   map[string]string
		want   []string
	}{
		"CapmoxOK":        {reason: "a bare URL and a full token id", data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": goodSecret}, want: []string{":OK"}},
		"DoubledAPIPath":  {reason: "capmox appends /api2/json itself", data: map[string]string{"PROXMOX_URL": "https://pve:8006/api2/json", "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": goodSecret}, want: []string{"PROXMOX_URL:DoubledAPIPath"}},
		"TokenNoUser":     {reason: "a token id needs user@realm", data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "capi", "PROXMOX_SECRET": goodSecret}, want: []string{"PROXMOX_TOKEN:UserNotToken"}},
		"TokenBangNoAt":   {reason: "!tokenid without user@realm", data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "capmox!capi", "PROXMOX_SECRET": goodSecret}, want: []string{"PROXMOX_TOKEN:TokenWithoutUser"}},
		"UserOnly":        {reason: "a user is not a token", data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "capmox@pve", "PROXMOX_SECRET": goodSecret}, want: []string{"PROXMOX_TOKEN:UserNotToken"}},
		"Swapped":         {reason: "id and secret swapped", data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": goodSecret, "PROXMOX_SECRET": "capmox@pve!capi"}, want: []string{"PROXMOX_TOKEN:SecretInTokenID", "PROXMOX_SECRET:TokenIDInSecret"}},
		"Root":            {reason: "root@pam bypasses ACLs", data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "root@pam!capi", "PROXMOX_SECRET": goodSecret}, want: []string{"PROXMOX_TOKEN:RootToken"}},
		"Newline":         {reason: "a trailing newline breaks the header", data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "capmox@pve!capi\n", "PROXMOX_SECRET": goodSecret}, want: []string{"PROXMOX_TOKEN:Whitespace"}},
		"ControlInSecret": {reason: "a control byte inside the secret, which no header carries, is named with its position", data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": "5f2c\x07" + goodSecret}, want: []string{"PROXMOX_SECRET:ControlCharacter", "PROXMOX_SECRET:SecretNotUUID"}},
		"MissingSecret":   {reason: "all three keys", data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "capmox@pve!capi"}, want: []string{"PROXMOX_SECRET:MissingKey"}},
		"ClusterSecret":   {reason: "credentialsRef Secret without insecure", data: map[string]string{"url": "https://pve:8006", "token": "capmox@pve!capi", "secret": goodSecret}, want: []string{"insecure:InsecureByDefault"}},
		"CloudOK":         {reason: "the CCM/CSI url ends in /api2/json", data: map[string]string{"url": "https://pve:8006/api2/json", "token_id": "ccm@pve!ccm", "token_secret": goodSecret, "region": "pve-eu1"}, want: []string{":OK"}},
		"CloudNoAPIPath":  {reason: "the CCM client does not append it", data: map[string]string{"url": "https://pve:8006", "token_id": "ccm@pve!ccm", "token_secret": goodSecret, "region": "pve-eu1"}, want: []string{"url:MissingAPIPath"}},
		"CloudNoRegion":   {reason: "region is required", data: map[string]string{"url": "https://pve:8006/api2/json", "token_id": "ccm@pve!ccm", "token_secret": goodSecret}, want: []string{"region:MissingKey"}},
		"PlainHTTP":       {reason: "http sends the token in clear", data: map[string]string{"url": "http://pve:8006/api2/json", "token_id": "ccm@pve!ccm", "token_secret": goodSecret, "region": "r"}, want: []string{"url:PlainHTTP"}},
		"NotURL":          {reason: "a host name alone", data: map[string]string{"url": "pve:8006", "token_id": "ccm@pve!ccm", "token_secret": goodSecret, "region": "r"}, want: []string{"url:BadURL"}},
		"CapmoxUserinfo":  {reason: "a password in the URL is refused, and not repeated", data: map[string]string{"PROXMOX_URL": "https://root:hunter2@pve:8006", "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": goodSecret}, want: []string{"PROXMOX_URL:URLUserinfo"}},
		"CloudUserinfo":   {reason: "the CCM URL may not carry a user either", data: map[string]string{"url": "https://ccm:hunter2@pve:8006/api2/json", "token_id": "ccm@pve!ccm", "token_secret": goodSecret, "region": "r"}, want: []string{"url:URLUserinfo"}},
		"CloudDoubled":    {reason: "/api2/json twice gets 501", data: map[string]string{"url": "https://pve:8006/api2/json/api2/json", "token_id": "ccm@pve!ccm", "token_secret": goodSecret, "region": "r"}, want: []string{"url:DoubledAPIPath"}},
		"CloudConfigOK":   {reason: "the upstream charts' config.yaml with one good cluster", data: map[string]string{"config.yaml": "clusters:\n- url: https://pve:8006/api2/json\n  insecure: false\n  token_id: ccm@pve!ccm\n  token_secret: " + goodSecret + "\n  region: pve-eu1\nfeatures: {provider: capmox}\n"}, want: []string{":OK"}},
		"CloudConfigBadCluster": {reason: "each cluster is checked as a CCM/CSI Secret, named by its index", data: map[string]string{"config.yaml": "clusters:\n- {url: 'https://pve:8006/api2/json', token_id: ccm@pve!ccm, token_secret: " + goodSecret + ", region: a}\n- {url: 'https://pve2:8006', token_id: ccm, token_secret: " + goodSecret + ", region: b}\n"},
			want: []string{"config.yaml:clusters[1].url:MissingAPIPath", "config.yaml:clusters[1].token_id:UserNotToken"}},
		"CloudConfigTypo":  {reason: "an unknown key is refused by name", data: map[string]string{"config.yaml": "clusters:\n- {url: 'https://pve:8006/api2/json', tokenid: x, region: a}\n"}, want: []string{"config.yaml:BadCloudConfig"}},
		"CloudConfigEmpty": {reason: "no cluster is an error", data: map[string]string{"config.yaml": "clusters: []\n"}, want: []string{"config.yaml:NoClusters"}},
		"CloudConfigFiles": {reason: "a token read from files cannot be checked here", data: map[string]string{"config.yaml": "clusters:\n- {url: 'https://pve:8006/api2/json', token_id_file: /run/id, token_secret_file: /run/secret, region: a}\n"}, want: []string{"config.yaml:clusters[0].token_id_file:TokenInFiles"}},
		"Unknown":          {reason: "no known keys", data: map[string]string{"password": "x"}, want: []string{":UnknownSecret"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fs := credlint.Lint([]credlint.Secret{{Namespace: "ns", Name: "s", Data: tc.data}})
			if diff := cmp.Diff(tc.want, codes(fs)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			for _, f := range fs {
				if strings.Contains(f.Message+f.Fix, goodSecret) || strings.Contains(f.Message+f.Fix, "hunter2") {
					t.Errorf("a finding carries the token secret: %+v", f)
				}
			}
		})
	}
}

// TestCloudConfigMatchesCase: in config.yaml a key in another case than
// the CCM's is refused by its path, alone or next to the right one (which
// would otherwise keep one of the two tokens without a word), and so is a
// key given twice; the same config with the right keys lints clean.
func TestCloudConfigMatchesCase(t *testing.T) {
	const control = "clusters:\n- url: https://pve:8006/api2/json\n  token_id: ccm@pve!ccm\n  token_secret: " + goodSecret + "\n  region: pve-eu1\n"
	lint := func(cfg string) []credlint.Finding {
		return credlint.Lint([]credlint.Secret{{Namespace: "ns", Name: "s", Data: map[string]string{"config.yaml": cfg}}})
	}
	if got := codes(lint(control)); !slices.Equal(got, []string{":OK"}) {
		t.Fatalf("control: %v", got)
	}
	cases := map[string]struct{ from, to, want string }{
		"Miscased":  {"  token_id:", "  Token_ID:", `unknown key "clusters[0].Token_ID" (did you mean "token_id"?)`},
		"BothCases": {"  region: pve-eu1\n", "  region: pve-eu1\n  Region: pve-us1\n", `unknown key "clusters[0].Region" (did you mean "region"?)`},
		"TopLevel":  {"clusters:", "Clusters:", `unknown key "Clusters" (did you mean "clusters"?)`},
		"Duplicate": {"  region: pve-eu1\n", "  region: pve-eu1\n  region: pve-us1\n", "config.yaml is not a cloud config"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(control, tc.from, tc.to, 1)
			if in == control {
				t.Fatalf("the edit %q did not apply", tc.from)
			}
			fs := lint(in)
			if got := codes(fs); !slices.Equal(got, []string{"config.yaml:BadCloudConfig"}) {
				t.Fatalf("codes %v, want config.yaml:BadCloudConfig", got)
			}
			if !strings.Contains(fs[0].Message, tc.want) || strings.Contains(fs[0].Message, goodSecret) {
				t.Errorf("message %q, want it to name %s and not the secret", fs[0].Message, tc.want)
			}
		})
	}
}

func TestReadSecrets(t *testing.T) {
	in := `apiVersion: v1
kind: Secret
metadata: {name: capmox-config, namespace: cozy-capi}
data:
  PROXMOX_URL: aHR0cHM6Ly9wdmU6ODAwNg==
stringData:
  PROXMOX_TOKEN: capmox@pve!capi
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata: {name: ccm}
  stringData: {url: "https://pve:8006/api2/json"}
`
	got, err := credlint.ReadSecrets(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []credlint.Secret{
		{Namespace: "cozy-capi", Name: "capmox-config", Data: map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "capmox@pve!capi"}},
		{Name: "ccm", Data: map[string]string{"url": "https://pve:8006/api2/json"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := credlint.ReadSecrets(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")); err == nil {
		t.Error("a ConfigMap must be refused")
	}
}

// fakePVE answers GET /api2/json/version like Proxmox: 401 for a wrong token,
// 501 for any other path.
func fakePVE(t *testing.T) *httptest.Server {
	return httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api2/json/version" {
			w.WriteHeader(http.StatusNotImplemented)
			return
		}
		if r.Header.Get("Authorization") != "PVEAPIToken=capmox@pve!capi="+goodSecret {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]string{"version": "9.0.3", "release": "9.0"}})
	}))
}

func TestProbe(t *testing.T) {
	srv := fakePVE(t)
	defer srv.Close()
	cases := map[string]struct {
		reason string
		data   map[string]string
		client *http.Client
		want   string
	}{
		"OK":          {reason: "a right token on a bare URL", data: map[string]string{"PROXMOX_URL": srv.URL, "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": goodSecret}, want: "ProbeOK"},
		"Doubled":     {reason: "the doubled path answers 501", data: map[string]string{"PROXMOX_URL": srv.URL + "/api2/json", "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": goodSecret}, want: "WrongAPIPath"},
		"BadToken":    {reason: "a wrong secret answers 401", data: map[string]string{"PROXMOX_URL": srv.URL, "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": "00000000-0000-0000-0000-000000000000"}, want: "TokenRejected"},
		"CloudOK":     {reason: "the CCM url already has /api2/json", data: map[string]string{"url": srv.URL + "/api2/json", "token_id": "capmox@pve!capi", "token_secret": goodSecret, "region": "r"}, want: "ProbeOK"},
		"CloudNoPath": {reason: "a bare CCM url misses the API", data: map[string]string{"url": srv.URL, "token_id": "capmox@pve!capi", "token_secret": goodSecret, "region": "r"}, want: "WrongAPIPath"},
		"ControlByte": {reason: "a secret no header can carry is not sent", data: map[string]string{"PROXMOX_URL": srv.URL, "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": goodSecret[:4] + "\x1b" + goodSecret[4:]}, want: "ProbeImpossible"},
		"Untrusted":   {reason: "TLS is verified: an unknown CA fails", data: map[string]string{"PROXMOX_URL": srv.URL, "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": goodSecret}, client: &http.Client{}, want: "TLSUntrusted"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := tc.client
			if c == nil {
				c = srv.Client()
			}
			f := credlint.Prober{Client: c}.Probe(context.Background(), credlint.Secret{Name: "s", Data: tc.data})
			if f.Code != tc.want {
				t.Errorf("%s: got %s (%s), want %s", tc.reason, f.Code, f.Message, tc.want)
			}
			if strings.Contains(f.Message+f.Fix, goodSecret) {
				t.Errorf("the probe finding carries the secret: %+v", f)
			}
		})
	}
}

// FuzzReadSecrets: reading never panics, and no finding ever quotes the
// value of PROXMOX_SECRET, secret or token_secret.
func FuzzReadSecrets(f *testing.F) {
	f.Add("apiVersion: v1\nkind: Secret\nmetadata: {name: a}\nstringData: {PROXMOX_URL: 'https://h:8006/api2/json', PROXMOX_TOKEN: 'u@pve!t', PROXMOX_SECRET: 'zz-secret-zz'}\n")
	f.Add("apiVersion: v1\nkind: Secret\nmetadata: {name: a}\nstringData: {url: 'x', token_id: 'zz-secret-zz', token_secret: 'zz-secret-zz'}\n")
	f.Add("{}")
	f.Fuzz(func(t *testing.T, in string) {
		ss, err := credlint.ReadSecrets(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, fd := range credlint.Lint(ss) {
			for _, s := range ss {
				for _, k := range []string{"PROXMOX_SECRET", "secret", "token_secret"} {
					v := strings.TrimSpace(s.Data[k])
					quoted := v == strings.TrimSpace(s.Data["url"]) || v == strings.TrimSpace(s.Data["PROXMOX_URL"]) || v == strings.TrimSpace(s.Data["region"])
					if len(v) >= 8 && !quoted && strings.Contains(fd.Message+fd.Fix, v) {
						t.Fatalf("finding %+v quotes the %s value", fd, k)
					}
				}
			}
		}
	})
}

// TestProbeRefusesUserinfo: a URL with a password is not sent anywhere,
// and the finding does not repeat it.
func TestProbeRefusesUserinfo(t *testing.T) {
	s := credlint.Secret{Namespace: "ns", Name: "s", Data: map[string]string{"PROXMOX_URL": "https://root:hunter2@127.0.0.1:1", "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": goodSecret}}
	f := credlint.Prober{}.Probe(context.Background(), s)
	if f.Code != "ProbeImpossible" || strings.Contains(f.Message+f.Fix, "hunter2") {
		t.Errorf("probe of a URL with a password: %+v", f)
	}
	s.Data["PROXMOX_URL"] = "https://root:hunter2@pve:8006/%zz"
	if f := (credlint.Prober{}).Probe(context.Background(), s); f.Code != "ProbeImpossible" || strings.Contains(f.Message, "hunter2") {
		t.Errorf("probe of an unparsable URL with a password: %+v", f)
	}
}

// TestReadSecretsEveryDocument: a Secret after a document end marker, or a
// syntax error in a later document, is refused, naming the document and
// its line in the file, never skipped.
func TestReadSecretsEveryDocument(t *testing.T) {
	a := "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\nstringData: {url: \"https://pve:8006/api2/json\"}\n"
	cases := map[string]struct{ in, want string }{
		"AfterEnd":       {a + "...\napiVersion: v1\nkind: Secret\nmetadata: {name: b}\n", "document 2: yaml: line 5: did not find expected <document start>"},
		"SyntaxInSecond": {a + "---\napiVersion: v1\nkind: Secret\n metadata: {name: b}\n", "document 2: yaml: line 8: mapping values are not allowed"},
		"DuplicateKey": {a + "---\napiVersion: v1\nkind: Secret\nkind: ConfigMap\n", `document 2: yaml: unmarshal errors:
  line 8: key "kind" already set in map`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := credlint.ReadSecrets(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadSecrets = %v, %v; want an error containing %q", got, err, tc.want)
			}
		})
	}
	got, err := credlint.ReadSecrets(strings.NewReader("---\n---\n" + a + "---\n" + strings.Replace(a, "{name: a}", "{name: b}", 1) + "---\n"))
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Errorf("two Secrets among empty documents: %v, %v", got, err)
	}
}
