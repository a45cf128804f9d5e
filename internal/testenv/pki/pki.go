// Package pki is a throwaway certificate authority for tests: a CA made on
// the spot and leaf certificates with exactly the extended key usages and
// subject alternative names a test asks for (none at all included), so
// tests can present what a real server presents, or what a misconfigured
// one does. It never reads or writes files and never touches a system trust
// store.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"
)

// CA is a certificate authority valid from an hour ago for a day.
type CA struct {
	t    testing.TB
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, to trust.
	PEM    []byte
	mu     sync.Mutex
	serial int64
}

// Leaf says what a certificate Issue makes is for. The zero value is a
// certificate without extended key usages and without any SAN.
type Leaf struct {
	EKUs     []x509.ExtKeyUsage
	DNSNames []string
	IPs      []net.IP
}

// Loopback is the address of a test server, as a SAN.
var Loopback = []net.IP{net.ParseIP("127.0.0.1")}

// New makes a CA named cn; it fails t if the key or certificate cannot be
// made.
func New(t testing.TB, cn string) *CA {
	t.Helper()
	ca, err := Make(cn)
	if err != nil {
		t.Fatal(err)
	}
	ca.t = t
	return ca
}

// Make makes a CA named cn without a test, for a TestMain that shares one
// server among a package's tests; its certificates come from Sign, and
// Issue and KeyPEM, which report to a test, must not be called on it.
func Make(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), serial: 1}, nil
}

// Issue returns a certificate for cn signed by the CA and its PKCS #8 key,
// both as PEM.
func (ca *CA) Issue(cn string, leaf Leaf) (certPEM, keyPEM []byte) {
	ca.t.Helper()
	certPEM, keyPEM, err := ca.Sign(cn, leaf)
	if err != nil {
		ca.t.Fatal(err)
	}
	return certPEM, keyPEM
}

// MakeLoopbackServer makes a CA named cn without a test (as Make) and a
// serving certificate of it for 127.0.0.1 and localhost, for a server a
// test starts and the API server calls (a webhook).
func MakeLoopbackServer(cn string) (ca *CA, certPEM, keyPEM []byte, err error) {
	if ca, err = Make(cn); err != nil {
		return nil, nil, nil, err
	}
	certPEM, keyPEM, err = ca.Sign("127.0.0.1", Leaf{
		EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPs: Loopback, DNSNames: []string{"localhost"},
	})
	return ca, certPEM, keyPEM, err
}

// Sign is Issue returning its error instead of failing a test.
func (ca *CA) Sign(cn string, leaf Leaf) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ca.mu.Lock()
	ca.serial++
	serial := ca.serial
	ca.mu.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: leaf.EKUs, DNSNames: leaf.DNSNames, IPAddresses: leaf.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// KeyPEM returns the CA's own private key as an "EC PRIVATE KEY" block, for
// tests that must refuse a key where only certificates belong.
func (ca *CA) KeyPEM() []byte {
	ca.t.Helper()
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}
