package kubeovn

import (
	"errors"
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
	port, err := capi.FreePort()
	if err != nil {
		return err
	}
	healthPort, err := capi.FreePort()
	if err != nil {
		return err
	}
	if err := installWebhookConfig(k, filepath.Join(mod, webhookFile), port, ca.PEM); err != nil {
		return err
	}
	env := []string{"KUBECONFIG=" + k.kubeconfig, "POD_IP=127.0.0.1", "POD_NAME=" + webhookPodName, "POD_NAMESPACE=" + Namespace}
	args := []string{"--port=" + strconv.Itoa(port), "--health-probe-port=" + strconv.Itoa(healthPort)}
	// The multi-call binary runs the webhook when its name is kube-ovn-webhook.
	proc, err := capi.StartProcess(WebhookBinary, filepath.Join(k.assets, WebhookBinary), args, env, filepath.Join(k.dir, WebhookBinary+".log"))
	if err != nil {
		return err
	}
	k.Webhook = proc
	return waitServing(proc, port, healthPort, ca.PEM)
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

// waitServing waits until the webhook answers /readyz and serves TLS with
// the test CA's certificate.
func waitServing(p *capi.Manager, port, healthPort int, caPEM []byte) error {
	deadline := time.Now().Add(readyTimeout)
	for !capi.Serving(port, healthPort, caPEM) {
		if p.Exited() {
			return fmt.Errorf("%s (pid %d) exited before it was ready; the last lines of its log:\n%s", WebhookBinary, p.Pid(), p.LogTail(logTailLines))
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("%s (pid %d) not ready after %s; the last lines of its log:\n%s",
				WebhookBinary, p.Pid(), readyTimeout, p.LogTail(logTailLines)), p.Stop())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}
