package admission

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webhookSuffix makes the policy names fully qualified webhook names.
const webhookSuffix = ".proxmox.cozystack.io"

// WebhookName is the name of the webhook that runs a policy.
func WebhookName(policy string) string { return policy + webhookSuffix }

// WebhookConfiguration returns a ValidatingWebhookConfiguration named name
// that sends what the enabled policies of cfg judge to the webhook at cc,
// with the same rules and match conditions as the policies and
// failurePolicy Fail. It is the webhook counterpart of Policies; install one
// of the two, not both.
func WebhookConfiguration(name string, cfg Config, cc admissionregistrationv1.WebhookClientConfig) (admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	set, err := Policies(cfg)
	if err != nil {
		return admissionregistrationv1.ValidatingWebhookConfiguration{}, err
	}
	out := admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	timeout := int32(10)
	for _, p := range set.Policies {
		var rules []admissionregistrationv1.RuleWithOperations
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			rules = append(rules, r.RuleWithOperations)
		}
		out.Webhooks = append(out.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name:                    WebhookName(p.Name),
			ClientConfig:            cc,
			Rules:                   rules,
			FailurePolicy:           &fail,
			MatchPolicy:             &equivalent,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         p.Spec.MatchConditions,
		})
	}
	return out, nil
}
