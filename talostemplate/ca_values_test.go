package talostemplate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pki"
)

func TestFactoryCA(t *testing.T) {
	ca := pki.New(t, "factory CA")
	cert, key, cert2 := string(ca.PEM), string(ca.KeyPEM()), string(pki.New(t, "factory CA").PEM)
	cases := map[string]struct {
		reason  string
		factory string
		ca      string
		want    string
		err     string
	}{
		"One":        {reason: "a certificate is kept", factory: "https://f.lan", ca: cert, want: cert},
		"TwoCRLF":    {reason: "several blocks, CRLF and blank lines around them", factory: "https://f.lan", ca: "\r\n" + strings.ReplaceAll(cert, "\n", "\r\n") + "\n\n" + cert2, want: cert + cert2},
		"Key":        {reason: "a private key must never travel into the program", factory: "https://f.lan", ca: cert + key, err: `it holds a "EC PRIVATE KEY" block`},
		"Preamble":   {reason: "text outside blocks is refused", factory: "https://f.lan", ca: "issuer: me\n" + cert, err: "text outside the certificate blocks"},
		"Trailer":    {reason: "trailing text is refused", factory: "https://f.lan", ca: cert + "bye\n", err: "text outside the certificate blocks"},
		"Truncated":  {reason: "a block without its END line is refused", factory: "https://f.lan", ca: cert[:len(cert)-30], err: "a block is incomplete"},
		"NotX509":    {reason: "base64 that is no certificate is refused", factory: "https://f.lan", ca: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", err: "not an X.509 certificate"},
		"HTTP":       {reason: "a CA only applies to https", factory: "http://f.lan", ca: cert, err: "a factory CA is set, but the factory URL 'http://f.lan' is not https"},
		"OnlyBlanks": {reason: "whitespace is no certificate", factory: "https://f.lan", ca: "\n \n", err: "it holds no certificate"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := goodInputs()
			in.FactoryURL, in.FactoryCA = tc.factory, []byte(tc.ca)
			s, err := NewSpec(in)
			if tc.err != "" {
				var ie *InvalidError
				if !errors.As(err, &ie) || ie.Field != "factoryCA" || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s: got %v, want a factoryCA error containing %q", tc.reason, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, s.FactoryCA); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("%s: Validate: %v", tc.reason, err)
			}
		})
	}
}

func TestReadChartValues(t *testing.T) {
	cases := map[string]struct {
		reason string
		doc    string
		want   ChartTalos
		err    string
	}{
		"Chart": {
			reason: "the talos: block of the kubernetes-nodes chart, among other keys",
			doc: "cluster: \"\"\ntalos:\n  version: \"v1.13.6\"\n  schematicID: \"" + idGuestAgent + "\"\n" +
				"  imageFactoryURL: \"https://factory.talos.dev\"\n  installerRepository: \"factory.talos.dev/installer\"\n  registryMirrors: {}\nsubstrate: kubevirt\n",
			want: ChartTalos{Version: "v1.13.6", SchematicID: idGuestAgent, ImageFactoryURL: "https://factory.talos.dev"},
		},
		"Miscased":  {reason: "a key read in another case would be taken for it", doc: "Talos:\n  version: v1.13.6\n", err: `unknown field "Talos"; did you mean "talos"?`},
		"BothCases": {reason: "of a key in two cases one would be dropped", doc: "talos:\n  version: v1.13.6\n  Version: v1.12.0\n", err: `unknown field "talos.Version"; did you mean "version"?`},
		"Duplicate": {reason: "a key given twice is refused", doc: "talos:\n  version: v1.13.6\n  version: v1.12.0\n", err: `key "version" already set`},
		"NoBlock":   {reason: "a file without talos: is not a pool's values", doc: "substrate: proxmox\n", err: "there is no talos: block"},
		"NotYAML":   {reason: "broken YAML is reported", doc: "talos: [\n", err: "cannot read the chart values"},
		"BadValue":  {reason: "a version must be a string", doc: "talos:\n  version: [1]\n", err: "cannot read the chart values"},
		"TwoDocs": {reason: "a talos: block in a second document is refused, not dropped", doc: "talos: {version: v1.13.6}\n---\ntalos: {version: v1.12.0}\n",
			err: "holds 2 YAML documents (the second begins on line 2)"},
		"LeadingMarkers": {reason: "empty documents hold nothing", doc: "---\n---\ntalos: {version: v1.13.6}\n", want: ChartTalos{Version: "v1.13.6"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ReadChartValues([]byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s: got %v, want %q", tc.reason, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestChartTalosApply(t *testing.T) {
	c := ChartTalos{Version: "v1.13.6", SchematicID: idGuestAgent, ImageFactoryURL: "https://mirror.lan"}
	got := c.Apply(Inputs{TalosVersion: "v1.14.0", VMID: "100"})
	want := Inputs{TalosVersion: "v1.14.0", SchematicID: idGuestAgent, FactoryURL: "https://mirror.lan", VMID: "100"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("explicit inputs override the chart; the chart fills the rest: -want +got:\n%s", diff)
	}
}
