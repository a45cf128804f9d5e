package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"slices"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pki"
)

// TestIssue: a leaf verifies against its CA with exactly the usages and
// SANs asked for, and not against another CA.
func TestIssue(t *testing.T) {
	ca := pki.New(t, "ca")
	certPEM, keyPEM := ca.Issue("srv", pki.Leaf{EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{"localhost"}, IPs: pki.Loopback})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	if leaf.Subject.CommonName != "srv" || !slices.Equal(leaf.DNSNames, []string{"localhost"}) || len(leaf.IPAddresses) != 1 {
		t.Fatalf("leaf %s, DNS %v, IPs %v", leaf.Subject.CommonName, leaf.DNSNames, leaf.IPAddresses)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the leaf does not verify against its CA: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a server-auth leaf verified for client auth")
	}
	other := x509.NewCertPool()
	other.AppendCertsFromPEM(pki.New(t, "other").PEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: other}); err == nil {
		t.Error("the leaf verified against another CA")
	}
	bareCert, bareKey := ca.Issue("bare", pki.Leaf{})
	bare, err := tls.X509KeyPair(bareCert, bareKey)
	if err != nil {
		t.Fatal(err)
	}
	if l := bare.Leaf; len(l.ExtKeyUsage) != 0 || len(l.DNSNames) != 0 || len(l.IPAddresses) != 0 {
		t.Errorf("a zero Leaf got usages %v, DNS %v, IPs %v", l.ExtKeyUsage, l.DNSNames, l.IPAddresses)
	}
}

// TestKeyPEM: the CA's key block is the key of the CA's certificate.
func TestKeyPEM(t *testing.T) {
	ca := pki.New(t, "ca")
	if _, err := tls.X509KeyPair(ca.PEM, ca.KeyPEM()); err != nil {
		t.Fatalf("the CA certificate and KeyPEM do not pair: %v", err)
	}
	if other := pki.New(t, "other"); slices.Equal(other.KeyPEM(), ca.KeyPEM()) {
		t.Fatal("two CAs share a key")
	}
}
