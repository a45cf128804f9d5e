package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig is a kubeconfig of cfg's API server (its address and CA) and
// cfg's credentials (client certificate and key, or token) in one context,
// acting as the user impersonate when that is not empty, so that the API
// server's RBAC decides as for that user: what kubectl and a process
// started next to a test API server read.
func Kubeconfig(cfg *rest.Config, impersonate string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Token: cfg.BearerToken, Impersonate: impersonate}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	return clientcmd.Write(*kc)
}

// WriteKubeconfig writes Kubeconfig(cfg, impersonate) to the file path,
// readable by its owner only.
func WriteKubeconfig(path string, cfg *rest.Config, impersonate string) error {
	data, err := Kubeconfig(cfg, impersonate)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// KubeconfigFile writes Kubeconfig(cfg, impersonate) into a temporary
// folder of t and returns its path; it fails t when it cannot.
func KubeconfigFile(t testing.TB, cfg *rest.Config, impersonate string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, cfg, impersonate); err != nil {
		t.Fatal(err)
	}
	return path
}
