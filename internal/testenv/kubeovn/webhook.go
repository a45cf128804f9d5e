package kubeovn

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pki"
	"github.com/pxsubstrate/pxsubstrate/testproc"
)

const (
	// webhookFile is the module's webhook manifest (plain YAML: the
	// configuration, and cert-manager's Certificate and Issuer, which the
	// test CA replaces).
	webhookFile = "yamls/webhook.yaml"
	// webhookCertDir is the folder kube-ovn-webhook reads its serving
	// certificate from (cmd/webhook: hookServerCertDir), which cannot be
	// told otherwise; a lock in it keeps one test's webhook at a time.
	webhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
	certLockWait   = 15 * time.Minute
)

// startWebhook writes a serving certificate of a throwaway CA, installs the
// module's ValidatingWebhookConfiguration calling 127.0.0.1 and starts
// kube-ovn-webhook, returning once it is ready and serves TLS.
func (k *KubeOVN) startWebhook(mod string) error {
	ca, certPEM, keyPEM, err := pki.MakeLoopbackServer("pxsubstrate kube-ovn test CA")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(webhookCertDir, 0o700); err != nil {
		return err
	}
	if k.releaseCerts, err = capi.LockFile(filepath.Join(filepath.Dir(webhookCertDir), "pxsubstrate.lock"), certLockWait); err != nil {
		return fmt.Errorf("cannot start kube-ovn-webhook: %w", err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(webhookCertDir, name), data, 0o600); err != nil {
			return err
		}
	}
	port, err := testproc.FreePort()
	if err != nil {
		return err
	}
	healthPort, err := testproc.FreePort()
	if err != nil {
		return err
	}
	if err := installWebhookConfig(k, filepath.Join(mod, webhookFile), port, ca.PEM); err != nil {
		return err
	}
	env := []string{"KUBECONFIG=" + k.kubeconfig, "POD_IP=127.0.0.1", "POD_NAME=" + webhookPodName, "POD_NAMESPACE=" + Namespace}
	args := []string{"--port=" + strconv.Itoa(port), "--health-probe-port=" + strconv.Itoa(healthPort)}
	// The multi-call binary runs the webhook when its name is kube-ovn-webhook.
	p := capi.Process(WebhookBinary, filepath.Join(k.assets, WebhookBinary), args, env, filepath.Join(k.dir, WebhookBinary+".log"))
	p.Ready = func() error {
		if !capi.Serving(port, healthPort, ca.PEM) {
			return fmt.Errorf("no /readyz on port %d or no webhook on port %d", healthPort, port)
		}
		return nil
	}
	if err := p.Start(); err != nil {
		return err
	}
	k.Webhook = p
	return nil
}

// installWebhookConfig creates (or replaces) the module's
// ValidatingWebhookConfiguration with its service reference turned into
// https://127.0.0.1:port<path>, trusting caPEM in place of cert-manager's
// injection.
func installWebhookConfig(k *KubeOVN, file string, port int, caPEM []byte) error {
	docs, err := capi.ReadDocs(file)
	if err != nil {
		return err
	}
	var cfgs []*admissionv1.ValidatingWebhookConfiguration
	for _, d := range docs {
		var tm struct{ Kind string }
		if err := yaml.Unmarshal(d, &tm); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if tm.Kind != "ValidatingWebhookConfiguration" {
			continue // cert-manager's Certificate and Issuer
		}
		v := &admissionv1.ValidatingWebhookConfiguration{}
		if err := yaml.UnmarshalStrict(d, v); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		delete(v.Annotations, "cert-manager.io/inject-ca-from")
		for i := range v.Webhooks {
			cc := &v.Webhooks[i].ClientConfig
			if cc.Service == nil || cc.Service.Path == nil {
				return fmt.Errorf("%s: webhook %s has no service path", file, v.Webhooks[i].Name)
			}
			url := fmt.Sprintf("https://127.0.0.1:%d%s", port, *cc.Service.Path)
			cc.Service, cc.URL, cc.CABundle = nil, &url, caPEM
		}
		cfgs = append(cfgs, v)
	}
	if len(cfgs) == 0 {
		return fmt.Errorf("%s holds no ValidatingWebhookConfiguration", file)
	}
	c, err := client.New(k.cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return err
	}
	for _, v := range cfgs {
		if err := capi.CreateOrReplace(c, v); err != nil {
			return fmt.Errorf("cannot install %s: %w", v.Name, err)
		}
	}
	return nil
}
