package testenv_test

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// TestKubeconfig: the file names cfg's server, CA and credentials, and the
// user to act as, and reads back as the same client configuration.
func TestKubeconfig(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "t",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}}
	path := testenv.KubeconfigFile(t, cfg, "system:serviceaccount:ns:sa")
	got, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != cfg.Host || string(got.CAData) != "ca" || string(got.CertData) != "cert" || string(got.KeyData) != "key" ||
		got.BearerToken != "t" || got.Impersonate.UserName != "system:serviceaccount:ns:sa" {
		t.Errorf("read back %+v", got)
	}
}
