package controller

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/admission"
)

// Names of the objects the manifests under config/ hold.
const (
	WebhookServiceName    = "proxmox-network-controller-webhook"
	WebhookConfigName     = "proxmox-network-controller"
	WebhookCertSecret     = "proxmox-network-controller-webhook-tls"
	MetricsServiceName    = "proxmox-network-controller-metrics"
	ServiceAccountName    = "proxmox-network-controller"
	injectCAAnnotation    = "cert-manager.io/inject-ca-from"
	generatedHeader       = "# Generated from the admission package by internal/controller; do not edit.\n# Regenerate: go test ./internal/controller -run TestGeneratedManifests -update\n"
	PoliciesManifest      = "config/policies/policies.yaml"
	WebhookConfigManifest = "config/webhook/validatingwebhookconfiguration.yaml"
)

// GeneratedManifests renders the manifests under config/ and the chart
// templates that come from the admission package, keyed by their path in
// the repository: the
// ValidatingAdmissionPolicies and bindings of the package defaults, and the
// ValidatingWebhookConfiguration that sends the same requests to the
// controller's webhook Service instead (its CA bundle is injected by
// cert-manager from the webhook's Certificate).
func GeneratedManifests() (map[string][]byte, error) {
	cfg := admission.DefaultConfig()
	set, err := admission.Policies(cfg)
	if err != nil {
		return nil, err
	}
	policies, err := set.YAML()
	if err != nil {
		return nil, err
	}
	vwc, err := WebhookConfiguration(cfg, DefaultNamespace)
	if err != nil {
		return nil, err
	}
	hooks, err := yaml.Marshal(vwc)
	if err != nil {
		return nil, fmt.Errorf("cannot render the webhook configuration: %w", err)
	}
	chartPolicies, chartWebhook, err := chartTemplates()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		PoliciesManifest:      append([]byte(generatedHeader), policies...),
		WebhookConfigManifest: append([]byte(generatedHeader), hooks...),
		ChartPoliciesTemplate: chartPolicies,
		ChartWebhookTemplate:  chartWebhook,
	}, nil
}

// WebhookConfiguration is the ValidatingWebhookConfiguration that sends
// what the policies of cfg judge to the webhook Service in namespace, its
// CA bundle injected by cert-manager from the webhook's Certificate.
func WebhookConfiguration(cfg admission.Config, namespace string) (admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	path := WebhookPath
	port := int32(443)
	vwc, err := admission.WebhookConfiguration(WebhookConfigName, cfg, admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: WebhookServiceName, Path: &path, Port: &port},
	})
	if err != nil {
		return vwc, err
	}
	vwc.Annotations = map[string]string{injectCAAnnotation: namespace + "/" + WebhookServiceName}
	return vwc, nil
}
