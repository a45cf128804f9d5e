package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/admission"
	"github.com/pxsubstrate/pxsubstrate/capread"
)

// MaxAdmissionConfigBytes is the largest --admission-config file read: the
// CLI's default --max-input-size, far above any package values file.
const MaxAdmissionConfigBytes = 8 << 20

// AdmissionConfig reads the package values named by --admission-config, or
// returns the package default (every policy on, no zones). A file of more
// than MaxAdmissionConfigBytes is refused.
func AdmissionConfig(path string) (admission.Config, error) {
	if path == "" {
		return admission.DefaultConfig(), nil
	}
	data, err := capread.File(path, MaxAdmissionConfigBytes)
	if err != nil {
		return admission.Config{}, fmt.Errorf("cannot read --admission-config: %w", err)
	}
	cfg, err := admission.ParseConfig(data)
	if err != nil {
		return admission.Config{}, fmt.Errorf("cannot load --admission-config %s: %w", path, err)
	}
	return cfg, nil
}

// setupWebhook serves the admission webhook on every replica: the same
// rules as the generated ValidatingAdmissionPolicies, with namespaces read
// from the informer cache.
func (p *Process) setupWebhook() error {
	if p.opts.WebhookPort == 0 {
		return nil
	}
	cfg, err := AdmissionConfig(p.opts.AdmissionConfig)
	if err != nil {
		return err
	}
	v, err := admission.New(cfg)
	if err != nil {
		return fmt.Errorf("cannot build the admission webhook: %w", err)
	}
	p.mgr.GetWebhookServer().Register(WebhookPath, admission.NewHandler(v, namespaces{p.mgr.GetClient()}))
	return nil
}

// namespaces reads the namespace of an admission request from a reader.
type namespaces struct{ r client.Reader }

func (n namespaces) GetNamespace(ctx context.Context, name string) (*admission.Namespace, error) {
	ns := &corev1.Namespace{}
	switch err := n.r.Get(ctx, client.ObjectKey{Name: name}, ns); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cannot get namespace %s: %w", name, err)
	}
	return admission.FromCore(ns), nil
}
