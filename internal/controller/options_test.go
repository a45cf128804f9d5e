package controller_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pxsubstrate/pxsubstrate/internal/controller"
)

// flagsParse parses args onto o and validates the result.
func flagsParse(o *controller.Options, args []string) error {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return o.Validate()
}

func TestOptions(t *testing.T) {
	cases := map[string]struct {
		reason string
		args   []string
		errs   []string
	}{
		"Defaults": {
			reason: "The defaults are the package's: ssl: NB with the kube-ovn-tls Secret, leader election on.",
		},
		"NoGatewayNeedsNoNB": {
			reason: "Without gateway management the NB flags are not checked.",
			args:   []string{"--manage-gateway-chassis=false", "--ovn-nb-address=", "--ovn-tls-secret="},
		},
		"SSLNeedsSecret": {
			reason: "ssl: endpoints without a TLS Secret cannot connect.",
			args:   []string{"--ovn-tls-secret="},
			errs:   []string{"--ovn-tls-secret must name the Secret"},
		},
		"BadEverything": {
			reason: "Every bad flag is reported at once.",
			args: []string{"--ovn-nb-address=http://x", "--ovn-tls-secret=kube-ovn-tls", "--subnet-prune-timeout=0s",
				"--leader-elect-renew-deadline=20s", "--webhook-port=70000", "--log-level=loud", "--workers=0"},
			errs: []string{"--ovn-nb-address", "want <namespace>/<name>", "--subnet-prune-timeout 0s must be positive",
				"leader election needs", "--webhook-port 70000", "--log-level \"loud\"", "--workers 0 must be at least 1"},
		},
		"PoolHealing": {
			reason: "Pool healing takes a mode, a grace period and an interval.",
			args:   []string{"--pool-healing=all", "--pool-healing-grace=30s", "--pool-healing-interval=10s"},
		},
		"BadPoolHealing": {
			reason: "An unknown mode and a zero grace period are refused by name.",
			args:   []string{"--pool-healing=some", "--pool-healing-grace=0s"},
			errs:   []string{`--pool-healing "some" is not one of off, labelled, all`, "--pool-healing-grace (0s) and --pool-healing-interval (1m0s) must be positive"},
		},
		"FailureDomains": {
			reason: "Failure domains are a switch with an interval.",
			args:   []string{"--failure-domains", "--failure-domains-interval=10s"},
		},
		"BadFailureDomains": {
			reason: "A zero interval is refused by name.",
			args:   []string{"--failure-domains", "--failure-domains-interval=0s"},
			errs:   []string{"--failure-domains-interval 0s must be positive"},
		},
		"UnixNeedsNoSecret": {
			reason: "A unix: endpoint needs no TLS.",
			args:   []string{"--ovn-nb-address=unix:/run/ovn/ovnnb_db.sock", "--ovn-tls-secret="},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := controller.DefaultOptions()
			err := flagsParse(&o, tc.args)
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatalf("%s\nunexpected error: %v", tc.reason, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s\nno error, want %q", tc.reason, tc.errs)
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s\nerror %q does not say %q", tc.reason, err, want)
				}
			}
		})
	}
}

func TestDefaultFlags(t *testing.T) {
	o := controller.DefaultOptions()
	got := map[string]any{
		"manage-gateway-chassis": o.ManageGatewayChassis, "ovn-nb-address": o.OVNNBAddress, "ovn-tls-secret": o.OVNTLSSecret,
		"subnet-prune-timeout": o.SubnetPruneTimeout, "leader-elect": o.LeaderElect, "metrics-bind-address": o.MetricsBindAddress,
		"webhook-port": o.WebhookPort, "metrics-secure": o.MetricsSecure, "enable-http2": o.EnableHTTP2, "tls-min-version": o.TLSMinVersion,
		"log-format": o.LogFormat, "workers": o.Workers,
		"pool-healing": o.PoolHealing, "pool-healing-grace": o.PoolHealingGrace, "pool-healing-interval": o.PoolHealingInterval,
		"failure-domains": o.FailureDomains, "failure-domains-interval": o.FailureDomainsInterval,
	}
	want := map[string]any{
		"manage-gateway-chassis": true, "ovn-nb-address": "ssl:ovn-nb.cozy-kubeovn.svc:6641", "ovn-tls-secret": "cozy-kubeovn/kube-ovn-tls",
		"subnet-prune-timeout": 10 * time.Minute, "leader-elect": true, "metrics-bind-address": ":8080", "webhook-port": 9443,
		"metrics-secure": true, "enable-http2": false, "tls-min-version": "1.2", "log-format": "json", "workers": 8,
		"pool-healing": "off", "pool-healing-grace": 5 * time.Minute, "pool-healing-interval": time.Minute,
		"failure-domains": false, "failure-domains-interval": 30 * time.Second,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults: -want +got:\n%s", diff)
	}
}

// FuzzParseSecretRef: a reference either fails with ErrFlags or names a
// valid namespace and Secret and prints back as its input.
func FuzzParseSecretRef(f *testing.F) {
	for _, s := range []string{"cozy-kubeovn/kube-ovn-tls", "a/b", "/x", "x/", "a/b/c", "A/b", "ns/name.with.dots", "", "ns/-bad"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := controller.ParseSecretRef(s)
		if err != nil {
			if !errors.Is(err, controller.ErrFlags) {
				t.Fatalf("ParseSecretRef(%q) error %v does not wrap ErrFlags", s, err)
			}
			return
		}
		if ref.String() != s {
			t.Fatalf("ParseSecretRef(%q) = %q, want the input back", s, ref)
		}
		if len(validation.IsDNS1123Label(ref.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(ref.Name)) > 0 {
			t.Fatalf("ParseSecretRef(%q) accepted an invalid reference %+v", s, ref)
		}
	})
}
