package controller_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/admission"
	"github.com/pxsubstrate/pxsubstrate/internal/controller"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pki"
)

// noNamespaces answers every namespace lookup with "no such namespace".
type noNamespaces struct{}

func (noNamespaces) GetNamespace(context.Context, string) (*admission.Namespace, error) {
	return nil, nil
}

// startWebhook serves the admission handler (body read timeout
// readTimeout) on the server the process builds from o, with a
// certificate of a test CA for 127.0.0.1; it returns the address and a
// pool trusting the CA.
func startWebhook(t *testing.T, o controller.Options, readTimeout time.Duration) (string, *x509.CertPool) {
	t.Helper()
	ca := pki.New(t, "webhook-ca")
	cert, key := ca.Issue("127.0.0.1", pki.Leaf{IPs: pki.Loopback})
	dir := t.TempDir()
	for name, b := range map[string][]byte{"tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := controllertest.FreeAddr(t)
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	o.WebhookPort, o.WebhookCertDir = port, dir
	srv := o.WebhookServer()
	v, err := admission.New(admission.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := admission.NewHandler(v, noNamespaces{})
	h.ReadTimeout = readTimeout
	srv.Register(controller.WebhookPath, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the webhook server stopped with %v", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
		if err == nil {
			c.Close()
			return addr, pool
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook server does not answer on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWebhookServerTransport: the webhook's server as the process builds
// it offers HTTP/1.1 only (HTTP/2 only with --enable-http2), refuses CBC
// cipher suites while an AEAD suite is accepted, and answers a client
// that trickles its body with 408 once the read timeout passes, while a
// prompt review is answered.
func TestWebhookServerTransport(t *testing.T) {
	o := controller.DefaultOptions()
	if err := flagsParse(&o, nil); err != nil {
		t.Fatal(err)
	}
	addr, pool := startWebhook(t, o, time.Second)

	t.Run("NoHTTP2", func(t *testing.T) {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
			t.Errorf("negotiated %q, want http/1.1", p)
		}
	})

	t.Run("CipherSuites", func(t *testing.T) {
		cbc := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256}
		if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12, CipherSuites: cbc}); err == nil {
			c.Close()
			t.Errorf("a TLS 1.2 client offering only CBC suites was served with %s", tls.CipherSuiteName(c.ConnectionState().CipherSuite))
		}
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}})
		if err != nil {
			t.Fatalf("a TLS 1.2 client offering AES-GCM was refused: %v", err)
		}
		c.Close()
		if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}); err == nil {
			c.Close()
			t.Errorf("a TLS 1.1 client was served")
		}
	})

	t.Run("SlowBody", func(t *testing.T) {
		review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"CREATE",` +
			`"kind":{"group":"","version":"v1","kind":"ConfigMap"},"namespace":"default","object":{}}}`
		// The control: a prompt review gets its answer.
		if code := post(t, addr, pool, review, 0); code != http.StatusOK {
			t.Errorf("a prompt review got %d, want 200", code)
		}
		// One byte every 300ms: the body would take longer than the
		// 1-second read timeout.
		if code := post(t, addr, pool, review, 300*time.Millisecond); code != http.StatusRequestTimeout {
			t.Errorf("a trickled body got %d, want 408 after the read timeout", code)
		}
	})
}

// post sends body to the webhook, one byte every gap (all at once when gap
// is zero), and returns the status code; the writes stop once the server
// has answered or closed.
func post(t *testing.T, addr string, pool *x509.CertPool, body string, gap time.Duration) int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", controller.WebhookPath, addr, len(body))
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	if gap == 0 {
		_, _ = c.Write([]byte(body))
		return <-answered
	}
	for _, b := range []byte(body) {
		select {
		case code := <-answered:
			return code
		case <-time.After(gap):
		}
		if _, err := c.Write([]byte{b}); err != nil {
			break // the server closed the connection; its answer decides
		}
	}
	return <-answered
}
