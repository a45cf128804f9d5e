package ovngateway_test

import (
	"context"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pki"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// issue returns a certificate and key for cn from ca with the given
// extended key usages (none at all when ekus is nil) and no subject
// alternative name, like Kube-OVN's NB certificate.
func issue(ca *pki.CA, cn string, ekus ...x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	return ca.Issue(cn, pki.Leaf{EKUs: ekus})
}

// TestTLSAgainstOVSDBServer runs the handshake against a real ovsdb-server
// listening on ssl:127.0.0.1 with a certificate for CN "ovn" and no SAN.
func TestTLSAgainstOVSDBServer(t *testing.T) {
	ca := pki.New(t, "ovn-ca")
	clientCert, clientKey := issue(ca, "ovn-client", x509.ExtKeyUsageClientAuth)
	cases := map[string]struct {
		reason    string
		serverEKU []x509.ExtKeyUsage
		trust     []byte
		wantErr   error
	}{
		"Trusted": {
			reason:    "a chain to cacert with serverAuth is accepted although the host name does not match",
			serverEKU: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			trust:     ca.PEM,
		},
		"NoExtendedKeyUsage": {
			reason: "a certificate without extended key usage allows every usage",
			trust:  ca.PEM,
		},
		"WrongCA": {
			reason:    "a chain to another CA is refused",
			serverEKU: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			trust:     pki.New(t, "other-ca").PEM,
			wantErr:   ovngateway.ErrUntrustedServer,
		},
		"ClientAuthOnly": {
			reason:    "a certificate that does not allow server authentication is refused",
			serverEKU: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			trust:     ca.PEM,
			wantErr:   ovngateway.ErrUntrustedServer,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			serverCert, serverKey := issue(ca, "ovn", tc.serverEKU...)
			s := ovngatewaytest.StartReal(t, ovngatewaytest.WithSSL(serverKey, serverCert, ca.PEM))
			admin := ovngatewaytest.Connect(t, s.Endpoint())
			ovngatewaytest.AddRouterPort(t, admin, "vpc1", testPort)
			cfg, err := ovngateway.TLSConfig(tc.trust, clientCert, clientKey)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := ovngateway.Dial(ctx, ovngateway.Config{Address: s.SSLEndpoint(), TLS: cfg})
			if tc.wantErr != nil {
				if c != nil {
					c.Close()
				}
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, ovngateway.ErrNBUnavailable) {
					t.Fatalf("%s: Dial: want %v, got %v", tc.reason, tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: Dial: %v", tc.reason, err)
			}
			defer c.Close()
			gw := gateway(t, "tenant-a", "net1", "vpc1", "sub1", threeNodes...)
			if o := reconcile(t, c, gw); !o.Changed || ovngatewaytest.Dump(t, admin).Ports[testPort].Group != testGroup {
				t.Errorf("%s: a reconcile over TLS must write the group: %+v", tc.reason, o)
			}
		})
	}
}

func TestTLSConfigRefusesBadSecrets(t *testing.T) {
	ca := pki.New(t, "ca")
	cert, key := issue(ca, "client", x509.ExtKeyUsageClientAuth)
	_, otherKey := issue(ca, "other")
	cases := map[string]struct {
		data    map[string][]byte
		wantErr string
	}{
		"MissingCACert": {map[string][]byte{"cert": cert, "key": key}, `key "cacert" is missing or empty`},
		"MissingKey":    {map[string][]byte{"cacert": ca.PEM, "cert": cert}, `key "key" is missing or empty`},
		"GarbageCACert": {map[string][]byte{"cacert": []byte("nope"), "cert": cert, "key": key}, `TLS secret key "cacert": invalid input: it holds no PEM certificate`},
		"KeyMismatch":   {map[string][]byte{"cacert": ca.PEM, "cert": cert, "key": otherKey}, `TLS secret keys "cert" and "key": invalid input`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ovngateway.TLSConfigFromSecret(tc.data)
			if !errors.Is(err, ovngateway.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("TLSConfigFromSecret: want ErrInvalid containing %q, got %v", tc.wantErr, err)
			}
		})
	}
	if _, err := ovngateway.TLSConfigFromSecret(map[string][]byte{"cacert": ca.PEM, "cert": cert, "key": key}); err != nil {
		t.Errorf("a complete secret must work: %v", err)
	}
}

// FuzzTLSConfig: any bytes give either ErrInvalid or a configuration that
// verifies servers itself.
func FuzzTLSConfig(f *testing.F) {
	ca := pki.New(f, "ca")
	cert, key := issue(ca, "client")
	f.Add(ca.PEM, cert, key)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), cert, key)
	f.Add(ca.PEM, key, cert)
	f.Fuzz(func(t *testing.T, caPEM, certPEM, keyPEM []byte) {
		cfg, err := ovngateway.TLSConfig(caPEM, certPEM, keyPEM)
		if err != nil {
			if !errors.Is(err, ovngateway.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if cfg.VerifyConnection == nil || cfg.RootCAs == nil || len(cfg.Certificates) != 1 {
			t.Fatalf("an accepted secret must give a verifying configuration: %+v", cfg)
		}
	})
}
