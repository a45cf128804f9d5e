package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// run executes the CLI in-process and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runIn(t, "", args...)
}

// runIn executes the CLI in-process with stdin. Every table a test prints
// in the default format is checked to fit 120 columns.
func runIn(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &out, &errOut)
	checkFits(t, args, out.String())
	return out.String(), errOut.String(), code
}

func TestOutputFormats(t *testing.T) {
	cases := map[string]struct {
		reason string
		args   []string
		code   int
		check  func(t *testing.T, out, errOut string)
	}{
		"Table": {
			reason: "the default format is a human line",
			args:   []string{"version"},
			check: func(t *testing.T, out, _ string) {
				if !strings.HasPrefix(out, "pxsubstrate ") {
					t.Errorf("want a line starting with pxsubstrate, got %q", out)
				}
			},
		},
		"JSON": {
			reason: "-o json prints an object scripts can parse",
			args:   []string{"version", "-o", "json"},
			check: func(t *testing.T, out, _ string) {
				var v versionInfo
				if err := json.Unmarshal([]byte(out), &v); err != nil || v.GoVersion == "" {
					t.Errorf("want JSON with goVersion, got %q (%v)", out, err)
				}
			},
		},
		"YAML": {
			reason: "-o yaml prints YAML keys",
			args:   []string{"-o", "yaml", "version"},
			check: func(t *testing.T, out, _ string) {
				if !strings.Contains(out, "goVersion: go") {
					t.Errorf("want goVersion key, got %q", out)
				}
			},
		},
		"BadFormat": {
			reason: "an unknown format is a usage error naming the valid ones",
			args:   []string{"version", "-o", "xml"},
			code:   2,
			check: func(t *testing.T, out, errOut string) {
				if out != "" || !strings.Contains(errOut, `unknown output format "xml"`) || !strings.Contains(errOut, "-o json") {
					t.Errorf("stdout %q stderr %q", out, errOut)
				}
			},
		},
		"UnknownCommand": {
			reason: "a typo exits 2 with the error on stderr only",
			args:   []string{"versoin"},
			code:   2,
			check: func(t *testing.T, out, errOut string) {
				if out != "" || !strings.Contains(errOut, "unknown command") {
					t.Errorf("stdout %q stderr %q", out, errOut)
				}
			},
		},
		"ExtraArgs": {
			reason: "arguments a command does not take are a usage error",
			args:   []string{"version", "extra"},
			code:   2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, tc.args...)
			if code != tc.code {
				t.Fatalf("%s: exit code %d, want %d (stderr %q)", tc.reason, code, tc.code, errOut)
			}
			if tc.check != nil {
				tc.check(t, out, errOut)
			}
		})
	}
}
