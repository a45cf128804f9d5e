package talostemplate

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"strings"
)

// checkFactoryCA accepts PEM text made only of complete CERTIFICATE blocks,
// each a parsable X.509 certificate, with nothing but blank space around
// them. A private key kept in the same file is refused so that it never
// travels into the root program. The result is the blocks re-encoded, so
// the program carries only base64 lines and the BEGIN/END markers.
func checkFactoryCA(data []byte, factoryURL string) (string, error) {
	bad := func(hint string) error {
		return invalid("factoryCA", "", "the factory CA is not a file of complete PEM certificate blocks and nothing else", hint)
	}
	if !strings.HasPrefix(factoryURL, "https://") {
		return "", invalid("factoryCA", factoryURL,
			"a factory CA is set, but the factory URL '"+show(factoryURL)+"' is not https",
			"a CA only makes sense for an https factory")
	}
	var out bytes.Buffer
	rest := data
	for len(bytes.TrimSpace(rest)) > 0 {
		start := bytes.Index(rest, []byte("-----BEGIN "))
		if start < 0 || len(bytes.TrimSpace(rest[:start])) > 0 {
			return "", bad("it holds text outside the certificate blocks")
		}
		block, next := pem.Decode(rest)
		if block == nil {
			return "", bad("a block is incomplete")
		}
		if block.Type != "CERTIFICATE" || len(block.Headers) > 0 {
			return "", bad("it holds a " + show(block.Type) + " block; keep only CERTIFICATE blocks in the file")
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return "", bad("a block is not an X.509 certificate: " + err.Error())
		}
		_ = pem.Encode(&out, &pem.Block{Type: block.Type, Bytes: block.Bytes}) // a bytes.Buffer never fails
		rest = next
	}
	if out.Len() == 0 {
		return "", bad("it holds no certificate")
	}
	return out.String(), nil
}
