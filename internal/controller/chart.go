package controller

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/pxsubstrate/pxsubstrate/admission"
)

// Paths of the chart templates generated from the admission package.
const (
	ChartPoliciesTemplate = "charts/proxmox-network/templates/admission-policies.yaml"
	ChartWebhookTemplate  = "charts/proxmox-network/templates/admission-webhook.yaml"
	chartHeader           = "{{- /* Generated from the admission package by internal/controller; do not edit.\n     Regenerate: go test ./internal/controller -run TestGeneratedManifests -update */ -}}\n"
)

// Placeholders the chart templates are generated with: a configuration
// whose values are these strings renders objects in which each of them
// stands where the chart's values go. chartValues maps each to the
// template expression (a string) that replaces it.
const (
	sentinelRelease      = "__RELEASE_NAMESPACE__"
	sentinelZoneBridge   = "__ZONE_BRIDGE__"
	sentinelUplinkBridge = "__UPLINK_BRIDGE__"
	sentinelUplinkVLAN   = 3777
	// sentinelVNetPrefix is a valid VNet prefix no zone bridge matches.
	sentinelVNetPrefix = "Qz9q"
	// sentinelValidationAct stands for admission.validationActions in
	// the bindings, the only place an action appears.
	sentinelValidationAct = admissionregistrationv1.Audit
)

var chartValues = []struct{ from, to string }{
	// Longest first: the exempt list holds the release namespace.
	{`["kube-system","` + sentinelRelease + `"]`, `(include "proxmox-network.exemptNamespaces" .)`},
	{`["` + sentinelZoneBridge + `"]`, `(include "proxmox-network.zoneBridges" .)`},
	{`["` + sentinelUplinkBridge + `"]`, `(include "proxmox-network.uplinkBridges" .)`},
	{fmt.Sprintf("[%d]", sentinelUplinkVLAN), `(include "proxmox-network.uplinkVLANs" .)`},
	{`["` + sentinelVNetPrefix + `"]`, `(include "proxmox-network.vnetPrefixes" .)`},
	{sentinelRelease, `.Release.Namespace`},
}

// chartConfig is the configuration the templates are generated from.
func chartConfig() admission.Config {
	return admission.Config{
		ReleaseNamespace:  sentinelRelease,
		Zones:             []admission.Zone{{Name: "zone", Bridge: sentinelZoneBridge, UplinkVLAN: sentinelUplinkVLAN, UplinkBridges: []string{sentinelUplinkBridge}, VNetPrefix: sentinelVNetPrefix}},
		MachineBinding:    true,
		VMAttachments:     true,
		PodAttachments:    true,
		ImmutableFields:   true,
		ValidationActions: []admissionregistrationv1.ValidationAction{sentinelValidationAct},
	}
}

// policySwitch is the values flag that turns each policy on.
var policySwitch = map[string]string{
	"proxmox-network-machine-binding": ".Values.admission.enabled",
	"proxmox-network-vm-attachments":  ".Values.admission.vmNetworkNamespace",
	"proxmox-network-pod-attachments": ".Values.admission.podNetworkNamespace",
	admission.PolicyImmutableFields:   ".Values.admission.immutableFields",
}

// chartTemplates renders the chart's admission templates: each policy and
// its binding, and each webhook, behind the values flag that enables it,
// as JSON documents whose strings take the values' lists.
func chartTemplates() (policies, webhook []byte, err error) {
	cfg := chartConfig()
	set, err := admission.Policies(cfg)
	if err != nil {
		return nil, nil, err
	}
	var p strings.Builder
	p.WriteString(chartHeader)
	p.WriteString("{{- if not .Values.admission.webhook.enabled }}\n")
	for i, pol := range set.Policies {
		doc, err := chartJSON(pol)
		if err != nil {
			return nil, nil, err
		}
		bind, err := chartJSON(set.Bindings[i])
		if err != nil {
			return nil, nil, err
		}
		actions := `"validationActions":["` + string(sentinelValidationAct) + `"]`
		if !strings.Contains(bind, actions) {
			return nil, nil, fmt.Errorf("binding %s has no %s to template", set.Bindings[i].Name, actions)
		}
		bind = strings.Replace(bind, actions, `"validationActions":{{ .Values.admission.validationActions | toJson }}`, 1)
		fmt.Fprintf(&p, "{{- if %s }}\n---\n%s\n---\n%s\n{{- end }}\n", policySwitch[pol.Name], doc, bind)
	}
	p.WriteString("{{- end }}\n")

	vwc, err := WebhookConfiguration(cfg, sentinelRelease)
	if err != nil {
		return nil, nil, err
	}
	meta, err := chartJSON(vwc.ObjectMeta)
	if err != nil {
		return nil, nil, err
	}
	var w strings.Builder
	w.WriteString(chartHeader)
	w.WriteString("{{- if and .Values.admission.webhook.enabled (or " + strings.Join(sortedSwitches(), " ") + ") }}\n")
	fmt.Fprintf(&w, "apiVersion: %s\nkind: %s\nmetadata: %s\nwebhooks:\n", vwc.APIVersion, vwc.Kind, meta)
	for _, h := range vwc.Webhooks {
		doc, err := chartJSON(h)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(&w, "{{- if %s }}\n- %s\n{{- end }}\n", policySwitch[strings.TrimSuffix(h.Name, ".proxmox.cozystack.io")], doc)
	}
	w.WriteString("{{- end }}\n")
	return []byte(p.String()), []byte(w.String()), nil
}

func sortedSwitches() []string {
	var out []string
	for _, v := range policySwitch {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// chartJSON marshals v to JSON and turns every string that holds a
// placeholder into a template action that builds the string from the
// values.
func chartJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("cannot render a chart template: %w", err)
	}
	var out strings.Builder
	s := string(b)
	for len(s) > 0 {
		start := strings.IndexByte(s, '"')
		if start < 0 {
			out.WriteString(s)
			break
		}
		end := stringEnd(s, start)
		out.WriteString(s[:start])
		out.WriteString(chartString(s[start:end]))
		s = s[end:]
	}
	return out.String(), nil
}

// stringEnd returns the index after the JSON string that starts at s[start].
func stringEnd(s string, start int) int {
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(s)
}

// chartString turns the JSON string literal lit into a template action
// when it holds a placeholder; a JSON string literal is also a template
// string literal.
func chartString(lit string) string {
	var str string
	if err := json.Unmarshal([]byte(lit), &str); err != nil {
		return lit
	}
	parts := []string{str}
	for _, v := range chartValues {
		var next []string
		for _, part := range parts {
			if strings.HasPrefix(part, "\x00") {
				next = append(next, part)
				continue
			}
			pieces := strings.Split(part, v.from)
			for i, piece := range pieces {
				if i > 0 {
					next = append(next, "\x00"+v.to)
				}
				next = append(next, piece)
			}
		}
		parts = next
	}
	if len(parts) == 1 {
		return lit
	}
	var args []string
	for _, part := range parts {
		if strings.HasPrefix(part, "\x00") {
			args = append(args, part[1:])
		} else if part != "" {
			q, _ := json.Marshal(part)
			args = append(args, string(q))
		}
	}
	return "{{ list " + strings.Join(args, " ") + ` | join "" | toJson }}`
}
