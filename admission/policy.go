package admission

import (
	"bytes"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// PolicySet is the generated ValidatingAdmissionPolicies and their
// bindings, one binding per policy, named after it.
type PolicySet struct {
	Policies []admissionregistrationv1.ValidatingAdmissionPolicy
	Bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// Policies builds the policies cfg switches on, with failurePolicy Fail.
func Policies(cfg Config) (PolicySet, error) {
	if err := cfg.Validate(); err != nil {
		return PolicySet{}, fmt.Errorf("cannot build admission policies: %w", err)
	}
	var set PolicySet
	add := func(p admissionregistrationv1.ValidatingAdmissionPolicy) {
		set.Policies = append(set.Policies, p)
		set.Bindings = append(set.Bindings, admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        p.Name,
				ValidationActions: cfg.validationActions(),
			},
		})
	}
	if cfg.MachineBinding {
		add(machineBindingPolicy(cfg))
	}
	if cfg.VMAttachments {
		add(vmAttachmentsPolicy(cfg))
	}
	if cfg.PodAttachments {
		add(podAttachmentsPolicy(cfg))
	}
	if cfg.ImmutableFields {
		add(immutableFieldsPolicy())
	}
	return set, nil
}

// Objects returns every policy and binding, each policy followed by its
// binding, as pointers ready for a client.
func (s PolicySet) Objects() []any {
	var out []any
	for i := range s.Policies {
		out = append(out, &s.Policies[i], &s.Bindings[i])
	}
	return out
}

// YAML returns the set as one YAML stream for `kubectl apply -f -`.
func (s PolicySet) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range s.Objects() {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("cannot render admission policies as YAML: %w", err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

func policy(name string, rules []admissionregistrationv1.NamedRuleWithOperations) admissionregistrationv1.ValidatingAdmissionPolicy {
	fail := admissionregistrationv1.Fail
	return admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules},
		},
	}
}

func rule(group, version string, ops []admissionregistrationv1.OperationType, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources},
	}}
}

var (
	createOnly      = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	createAndUpdate = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
)

func variable(name, expr string) admissionregistrationv1.Variable {
	return admissionregistrationv1.Variable{Name: name, Expression: expr}
}

func machineBindingPolicy(cfg Config) admissionregistrationv1.ValidatingAdmissionPolicy {
	p := policy(PolicyMachineBinding, []admissionregistrationv1.NamedRuleWithOperations{
		rule(GroupCAPMOX, "*", createOnly, "proxmoxmachines", "proxmoxmachinetemplates"),
	})
	p.Spec.Variables = machineVariables(cfg)
	p.Spec.Validations = machineValidations()
	return p
}

func machineVariables(cfg Config) []admissionregistrationv1.Variable {
	return []admissionregistrationv1.Variable{
		variable("owns", `namespaceObject != null && has(namespaceObject.metadata.annotations) && '`+AnnotationProxmoxNetworks+`' in namespaceObject.metadata.annotations`),
		variable("allowed", `variables.owns ? namespaceObject.metadata.annotations['`+AnnotationProxmoxNetworks+`'].split(',') : []`),
		variable("zoneBridges", celList(cfg.zoneBridges())),
		variable("uplinkVLANs", celList(cfg.uplinkVLANs())),
		variable("uplinkBridges", celList(cfg.uplinkBridges())),
		variable("spec", `request.kind.kind == '`+KindTemplate+`' `+
			`? (has(object.spec) && has(object.spec.template) && has(object.spec.template.spec) ? object.spec.template.spec : {}) `+
			`: (has(object.spec) ? object.spec : {})`),
		variable("network", `has(variables.spec.network) ? variables.spec.network : {}`),
		variable("nics", `(has(variables.network.default) ? [variables.network.default] : []) + `+
			`(has(variables.network.additionalDevices) ? variables.network.additionalDevices : []) + `+
			`(has(variables.network.networkDevices) ? variables.network.networkDevices : [])`),
		// nicFields names where each NIC of variables.nics sits (nic.field).
		variable("networkField", `request.kind.kind == '`+KindTemplate+`' ? 'spec.template.spec.network' : 'spec.network'`),
		variable("nicFields", `(has(variables.network.default) ? [variables.networkField + '.default'] : []) + `+
			`(has(variables.network.additionalDevices) ? variables.network.additionalDevices.transformList(i, d, variables.networkField + '.additionalDevices[' + string(i) + ']') : []) + `+
			`(has(variables.network.networkDevices) ? variables.network.networkDevices.transformList(i, d, variables.networkField + '.networkDevices[' + string(i) + ']') : [])`),
		// badNICs lists the indexes of the NICs whose bridge or VLAN
		// nicValuesRule refuses; badNIC is the first of them, or -1.
		variable("badNICs", `variables.nics.transformList(i, n, !`+celBridgeOK("n")+` || !`+celVLANOK("n")+`, i)`),
		variable("badNIC", `size(variables.badNICs) == 0 ? -1 : variables.badNICs[0]`),
		variable("zoneVNetPrefixes", celList(cfg.vnetPrefixes())),
		variable("triples", `variables.nics.map(n, `+celTriple("n")+`)`),
		variable("zoneTriples", `variables.nics.filter(n, `+celOnZoneBridge("n")+`).map(n, `+celTriple("n")+`)`),
		variable("vnetNICs", `variables.nics.filter(n, `+celOnZoneVNet("n")+`)`),
		variable("vnetTriples", `variables.vnetNICs.map(n, `+celTriple("n")+`)`),
	}
}

func machineValidations() []admissionregistrationv1.Validation {
	bad := strings.NewReplacer("{F}", "variables.nicFields[variables.badNIC]", "{N}", "variables.nics[variables.badNIC]")
	return []admissionregistrationv1.Validation{
		{
			Expression: `variables.badNIC < 0`,
			Message:    msgNICValues,
			MessageExpression: bad.Replace(`variables.badNIC < 0 ? '' : (!` + celBridgeOK("{N}") + ` ` +
				`? {F} + '.bridge is "' + {N}.bridge + '", ' + ` + celString(msgBadBridge) + ` ` +
				`: {F} + '.vlan is ' + string({N}.vlan) + ', ' + ` + celString(msgBadVLAN) + `)`),
		},
		{
			Expression: `!variables.owns || has(variables.network.default) || ` +
				`(has(variables.network.networkDevices) && variables.network.networkDevices.exists(d, !has(d.name) || d.name == 'net0'))`,
			Message: msgNeedsDefault,
		},
		{
			Expression: `variables.zoneTriples.all(t, t != '' && t in variables.allowed)`,
			Message:    msgZoneBridge,
			MessageExpression: `'` + msgZoneBridge + ` (' + (variables.owns ? variables.allowed.join(', ') : 'it has none') + '); got ' + ` +
				`variables.triples.filter(t, t != '').join(', ')`,
		},
		{
			Expression:        `variables.vnetNICs.all(n, !has(n.vlan))`,
			Message:           msgVNetTagged,
			MessageExpression: `'` + msgVNetTagged + `; got ' + variables.vnetNICs.filter(n, has(n.vlan)).map(n, n.bridge + '/' + string(n.vlan)).join(', ')`,
		},
		{
			Expression: `variables.vnetTriples.all(t, t != '' && t in variables.allowed)`,
			Message:    msgZoneVNet,
			MessageExpression: `'` + msgZoneVNet + ` (' + (variables.owns ? variables.allowed.join(', ') : 'it has none') + '); got ' + ` +
				`variables.triples.filter(t, t != '').join(', ')`,
		},
		{
			Expression: `variables.nics.all(n, ` + celOnZoneBridge("n") + ` || !has(n.vlan) || !(n.vlan in variables.uplinkVLANs))`,
			Message:    msgUplinkVLAN,
			MessageExpression: `'` + msgUplinkVLAN + ` (' + variables.uplinkVLANs.map(v, string(v)).join(', ') + '), which would put it on the zone trunk; got ' + ` +
				`variables.nics.filter(n, !` + celOnZoneBridge("n") + ` && has(n.vlan) && n.vlan in variables.uplinkVLANs)` +
				`.map(n, (has(n.bridge) ? n.bridge : '') + '/' + string(n.vlan)).join(', ')`,
		},
		{
			Expression: `variables.nics.all(n, !(has(n.bridge) && n.bridge in variables.uplinkBridges))`,
			Message:    msgUplinkBridge,
			MessageExpression: `'a NIC may not use ' + variables.uplinkBridges.join(', ') + ` +
				`': these bridges enslave the parent device of a Proxmox network zone uplink, so a machine on them reaches the zone trunk; got ' + ` +
				`variables.nics.filter(n, has(n.bridge) && n.bridge in variables.uplinkBridges)` +
				`.map(n, has(n.vlan) ? n.bridge + '/' + string(n.vlan) : n.bridge).join(', ')`,
		},
		{
			Expression:        `!variables.owns || variables.triples.all(t, t != '' && t in variables.allowed)`,
			Message:           msgEveryNIC,
			MessageExpression: `'` + msgEveryNIC + ` (bridge/vlan/pool one of ' + variables.allowed.join(', ') + ')'`,
		},
	}
}

func attachmentMatchConditions(cfg Config) []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{
		{Name: "outside-platform-namespaces", Expression: celNotPlatformNamespace(cfg.exemptNamespaces())},
		{Name: "not-being-deleted", Expression: `!has(object.metadata.deletionTimestamp)`},
	}
}

func vmAttachmentsPolicy(cfg Config) admissionregistrationv1.ValidatingAdmissionPolicy {
	p := policy(PolicyVMAttachments, []admissionregistrationv1.NamedRuleWithOperations{
		rule(GroupKubeVirt, "*", createAndUpdate, "virtualmachines", "virtualmachineinstances"),
	})
	p.Spec.MatchConditions = attachmentMatchConditions(cfg)
	podSpec := func(o string) string {
		return `variables.vm ` +
			`? (has(` + o + `.spec) && has(` + o + `.spec.template) && has(` + o + `.spec.template.spec) ? ` + o + `.spec.template.spec : {}) ` +
			`: (has(` + o + `.spec) ? ` + o + `.spec : {})`
	}
	annotations := func(o string) string {
		return `variables.vm ` +
			`? (has(` + o + `.spec) && has(` + o + `.spec.template) && has(` + o + `.spec.template.metadata) && has(` + o + `.spec.template.metadata.annotations) ? ` + o + `.spec.template.metadata.annotations : {}) ` +
			`: (has(` + o + `.metadata.annotations) ? ` + o + `.metadata.annotations : {})`
	}
	const multus = `.filter(n, has(n.multus) && has(n.multus.networkName))`
	const isDefault = `(has({N}.multus.default) && {N}.multus.default)`
	def := func(n string) string { return strings.ReplaceAll(isDefault, "{N}", n) }
	p.Spec.Variables = []admissionregistrationv1.Variable{
		variable("vm", `request.kind.kind == '`+KindVM+`'`),
		variable("podSpec", podSpec("object")),
		variable("oldPodSpec", `oldObject == null ? {} : (`+podSpec("oldObject")+`)`),
		variable("networks", `(has(variables.podSpec.networks) ? variables.podSpec.networks : [])`+multus),
		variable("oldNetworks", `(has(variables.oldPodSpec.networks) ? variables.oldPodSpec.networks : [])`+multus),
		variable("annotations", annotations("object")),
		variable("oldAnnotations", `oldObject == null ? {} : (`+annotations("oldObject")+`)`),
		variable("defaultSwitches", celDefaultSwitches),
		variable("foreignNetworks", `variables.networks.filter(n, `+
			`(`+def("n")+` ? !n.multus.networkName.startsWith(request.namespace + '/') `+
			`: (n.multus.networkName.contains('/') && !n.multus.networkName.startsWith(request.namespace + '/'))) && `+
			`!variables.oldNetworks.exists(o, o.multus.networkName == n.multus.networkName && `+def("o")+` == `+def("n")+`))`+
			`.map(n, n.multus.networkName)`),
		variable("refusedAnnotations", celRefusedAnnotations("true")),
	}
	p.Spec.Validations = []admissionregistrationv1.Validation{{
		Expression: `size(variables.foreignNetworks) == 0 && size(variables.refusedAnnotations) == 0`,
		Message:    msgVM,
		MessageExpression: celAttachmentMessage(msgVM,
			`variables.foreignNetworks + variables.refusedAnnotations.map(k, k + '=' + variables.annotations[k])`),
	}}
	return p
}

func podAttachmentsPolicy(cfg Config) admissionregistrationv1.ValidatingAdmissionPolicy {
	p := policy(PolicyPodAttachments, []admissionregistrationv1.NamedRuleWithOperations{
		rule("", "v1", createAndUpdate, "pods"),
	})
	p.Spec.MatchConditions = attachmentMatchConditions(cfg)
	p.Spec.Variables = []admissionregistrationv1.Variable{
		variable("annotations", `has(object.metadata.annotations) ? object.metadata.annotations : {}`),
		variable("oldAnnotations", `oldObject != null && has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}`),
		variable("defaultSwitches", celDefaultSwitches),
		variable("refusedAnnotations", celRefusedAnnotations(`request.operation == 'CREATE'`)),
	}
	p.Spec.Validations = []admissionregistrationv1.Validation{{
		Expression:        `size(variables.refusedAnnotations) == 0`,
		Message:           msgPod,
		MessageExpression: celAttachmentMessage(msgPod, `variables.refusedAnnotations.map(k, k + '=' + variables.annotations[k])`),
	}}
	return p
}
