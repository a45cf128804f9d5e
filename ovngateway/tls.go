package ovngateway

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// Keys of the TLS Secret Kube-OVN keeps for its OVN databases.
const (
	SecretKeyCACert = "cacert"
	SecretKeyCert   = "cert"
	SecretKeyKey    = "key"
)

// ErrUntrustedServer marks a server certificate that failed verification.
var ErrUntrustedServer = errors.New("OVN NB server certificate not trusted")

// TLSConfig builds the client side of a TLS connection to the NB from the
// PEM contents of the Secret's cacert, cert and key.
//
// The server's chain is verified against cacert, and its certificate must
// allow server authentication (an extended key usage of serverAuth, or none
// at all). Its host name is not checked, because Kube-OVN's NB certificate
// carries CN "ovn" and no subject alternative name: Go's built-in hostname
// check is turned off and replaced by a VerifyConnection callback that does
// all the other checks, on every handshake including resumed ones.
func TLSConfig(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cannot use TLS secret key %q: %w: it holds no PEM certificate", SecretKeyCACert, ErrInvalid)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("cannot use TLS secret keys %q and %q: %w: %w", SecretKeyCert, SecretKeyKey, ErrInvalid, err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		RootCAs:      roots,
		// The chain is verified in VerifyConnection, without a host name.
		InsecureSkipVerify: true, //nolint:gosec // verification happens in VerifyConnection
		VerifyConnection:   verifyServer(roots),
	}, nil
}

// TLSConfigFromSecret is TLSConfig over a Secret's data, naming the key that
// is missing.
func TLSConfigFromSecret(data map[string][]byte) (*tls.Config, error) {
	for _, k := range []string{SecretKeyCACert, SecretKeyCert, SecretKeyKey} {
		if len(data[k]) == 0 {
			return nil, fmt.Errorf("cannot use the TLS secret: %w: key %q is missing or empty; it needs %q, %q and %q",
				ErrInvalid, k, SecretKeyCACert, SecretKeyCert, SecretKeyKey)
		}
	}
	return TLSConfig(data[SecretKeyCACert], data[SecretKeyCert], data[SecretKeyKey])
}

func verifyServer(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("%w: the server sent no certificate", ErrUntrustedServer)
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		leaf := cs.PeerCertificates[0]
		_, err := leaf.Verify(x509.VerifyOptions{
			Roots:         roots,
			Intermediates: inter,
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			return fmt.Errorf("%w: certificate %q: %w", ErrUntrustedServer, leaf.Subject.CommonName, err)
		}
		return nil
	}
}
