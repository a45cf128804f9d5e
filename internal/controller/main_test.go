package controller_test

import (
	"bytes"
	"crypto/tls"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/controller"
)

// TestMainCommandLine: what the process prints and returns before it
// starts anything, as a Pod's log and restart count would show it.
func TestMainCommandLine(t *testing.T) {
	cases := map[string]struct {
		reason         string
		args           []string
		code           int
		stdout, stderr []string // substrings; nil: the stream stays empty
	}{
		"Help": {
			reason: "--help prints the usage with every flag on stdout",
			args:   []string{"--help"},
			stdout: []string{"Usage: proxmox-network-controller [flags]", "--ovn-nb-address", "--metrics-secure", "--enable-http2", "--tls-min-version", "--log-format", "--version"},
		},
		"ShortHelp": {
			reason: "-h is --help",
			args:   []string{"-h"},
			stdout: []string{"Usage: proxmox-network-controller [flags]"},
		},
		"Version": {
			reason: "--version prints the version line on stdout",
			args:   []string{"--version"},
			stdout: []string{"proxmox-network-controller ", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH},
		},
		"UnknownFlag": {
			reason: "a mistyped flag prints the error and the usage on stderr and exits 2",
			args:   []string{"--ovn-nb-adress=tcp:127.0.0.1:6641"},
			code:   2,
			stderr: []string{"proxmox-network-controller: unknown flag: --ovn-nb-adress", "Usage: proxmox-network-controller [flags]", "--ovn-nb-address"},
		},
		"BadValue": {
			reason: "a value of the wrong type is a flag error",
			args:   []string{"--webhook-port=https"},
			code:   2,
			stderr: []string{`invalid argument "https" for "--webhook-port"`, "Usage:"},
		},
		"Invalid": {
			reason: "values that parse but cannot work are reported all at once, with the usage",
			args:   []string{"--log-format=xml", "--tls-min-version=1.1", "--metrics-secure=false", "--metrics-cert-dir=/certs"},
			code:   2,
			stderr: []string{`--log-format "xml": use json or text`, `--tls-min-version "1.1": use 1.2 or 1.3`, "--metrics-cert-dir is set but --metrics-secure=false", "Usage:"},
		},
		"Arguments": {
			reason: "a positional argument is refused, not ignored",
			args:   []string{"--leader-elect=false", "extra"},
			code:   2,
			stderr: []string{`unexpected arguments ["extra"]`, "Usage:"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := controller.Main(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("%s\nexit code %d, want %d (stderr %q)", tc.reason, code, tc.code, stderr.String())
			}
			for stream, want := range map[*bytes.Buffer][]string{&stdout: tc.stdout, &stderr: tc.stderr} {
				if want == nil && stream.Len() > 0 {
					t.Errorf("%s\nunexpected output %q", tc.reason, stream.String())
				}
				for _, w := range want {
					if !strings.Contains(stream.String(), w) {
						t.Errorf("%s\noutput %q does not hold %q", tc.reason, stream.String(), w)
					}
				}
			}
		})
	}
}

func TestVersionLine(t *testing.T) {
	old := controller.Version
	t.Cleanup(func() { controller.Version = old })
	controller.Version = "v1.2.3"
	if got, want := controller.VersionLine(), "proxmox-network-controller v1.2.3 "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH; got != want {
		t.Errorf("VersionLine() = %q, want %q", got, want)
	}
	controller.Version = ""
	if got := controller.VersionLine(); !regexp.MustCompile(`^proxmox-network-controller \S+ go`).MatchString(got) {
		t.Errorf("VersionLine() without a set version = %q, want the build's module version", got)
	}
}

// TestTLSOptions: TLS 1.2 at least (1.3 on request), HTTP/1.1 only
// unless HTTP/2 is enabled.
func TestTLSOptions(t *testing.T) {
	cases := map[string]struct {
		args  []string
		min   uint16
		proto []string
	}{
		"Defaults":  {min: tls.VersionTLS12, proto: []string{"http/1.1"}},
		"TLS13":     {args: []string{"--tls-min-version=1.3"}, min: tls.VersionTLS13, proto: []string{"http/1.1"}},
		"WithHTTP2": {args: []string{"--enable-http2"}, min: tls.VersionTLS12, proto: []string{"h2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := controller.DefaultOptions()
			if err := flagsParse(&o, tc.args); err != nil {
				t.Fatal(err)
			}
			// controller-runtime's servers start from h2 and apply the options.
			c := &tls.Config{NextProtos: []string{"h2"}}
			for _, f := range o.TLSOptions() {
				f(c)
			}
			if c.MinVersion != tc.min || strings.Join(c.NextProtos, ",") != strings.Join(tc.proto, ",") {
				t.Errorf("TLS config: min version %x, protocols %v; want %x, %v", c.MinVersion, c.NextProtos, tc.min, tc.proto)
			}
		})
	}
}
