package admission

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PolicyImmutableFields refuses a change of the fields the managed-Kubernetes
// page calls immutable: a cluster's or a pool's substrate, and a pool's
// cluster and storageClass.
const PolicyImmutableFields = "proxmox-kubernetes-immutable-fields"

// The objects that carry a tenant cluster's values: the applications the
// aggregated API serves, and the Flux HelmReleases it stores them as.
const (
	GroupApps           = "apps.cozystack.io"
	GroupHelm           = "helm.toolkit.fluxcd.io"
	KindKubernetes      = "Kubernetes"
	KindKubernetesNodes = "KubernetesNodes"
	KindHelmRelease     = "HelmRelease"
	// LabelApplicationKind and LabelApplicationGroup are what the
	// aggregated API labels each HelmRelease with: the application's kind
	// and API group.
	LabelApplicationKind  = "apps.cozystack.io/application.kind"
	LabelApplicationGroup = "apps.cozystack.io/application.group"
	// DefaultSubstrate is the substrate of a cluster or pool that sets
	// none (both charts' default).
	DefaultSubstrate = "kubevirt"
)

// immutableField is one field the policy holds still, with its refusal.
type immutableField struct {
	app   string // KindKubernetes or KindKubernetesNodes
	field string // the key in the values
	def   string // the value an unset field stands for
	// head and tail frame the refusal; the composed message puts the old
	// and the new value between them.
	head, tail string
}

// immutableFields lists the rules in the order they are checked; the first
// broken one decides.
var immutableFields = []immutableField{
	{app: KindKubernetes, field: "substrate", def: DefaultSubstrate,
		head: "substrate of a Kubernetes cluster cannot change",
		tail: "create a new Kubernetes cluster on the other substrate and move the workloads to it"},
	{app: KindKubernetesNodes, field: "substrate", def: DefaultSubstrate,
		head: "substrate of a KubernetesNodes pool cannot change",
		tail: "create a new KubernetesNodes pool on the other substrate and scale this one down"},
	{app: KindKubernetesNodes, field: "cluster",
		head: "cluster of a KubernetesNodes pool cannot change",
		tail: "create a new KubernetesNodes pool named <cluster>-<pool> under the other cluster and delete this one"},
	{app: KindKubernetesNodes, field: "storageClass",
		head: "storageClass of a KubernetesNodes pool cannot change",
		tail: "create a new KubernetesNodes pool with the other storageClass and scale this one down"},
}

func (f immutableField) static() string { return f.head + ": " + f.tail }

func (f immutableField) composed(old, cur string) string {
	return f.head + ` ("` + old + `" to "` + cur + `"): ` + f.tail
}

// holdsValues reports whether kind is an object whose values the policy
// reads: an application or a HelmRelease.
func holdsValues(k metav1.GroupVersionKind) bool {
	switch k.Group {
	case GroupApps:
		return k.Kind == KindKubernetes || k.Kind == KindKubernetesNodes
	case GroupHelm:
		return k.Kind == KindHelmRelease
	}
	return false
}

// labelsRule keeps a HelmRelease that stores one of the two applications
// marked as such: without its labels the fields above go unjudged.
var labelsRule = immutableField{
	head: "the " + LabelApplicationGroup + " and " + LabelApplicationKind + " labels of a HelmRelease " +
		"that stores a Kubernetes or KubernetesNodes application cannot change",
	tail: "they tell admission which application it stores; update the application instead, or delete it and create a new one",
}

// immutableFieldsRule refuses an UPDATE that changes an immutable field of
// a Kubernetes or KubernetesNodes application, judged on the application
// itself or on the HelmRelease that stores it, and an UPDATE that takes
// such a HelmRelease's application labels away.
func (v *Validator) immutableFieldsRule(req Request) (Decision, error) {
	obj, old, err := decodePair(req)
	if err != nil {
		return Decision{}, err
	}
	if old == nil {
		old = object{}
	}
	app, err := applicationOf(req.Kind, old, obj)
	if err != nil || app == "" {
		return allow(), err
	}
	if d, err := fieldsUnchanged(req.Kind, app, old, obj); err != nil || !d.Allowed {
		return d, err
	}
	if req.Kind.Group != GroupHelm {
		return allow(), nil
	}
	was, err := labelledApplication(old)
	if err != nil {
		return Decision{}, err
	}
	is, err := labelledApplication(obj)
	if err != nil {
		return Decision{}, err
	}
	if was != "" && is != was {
		return deny(PolicyImmutableFields, labelsRule.composed(was, is), labelsRule.static()), nil
	}
	return allow(), nil
}

// fieldsUnchanged compares each immutable field of app between the old
// object and the new one.
func fieldsUnchanged(k metav1.GroupVersionKind, app string, old, obj object) (Decision, error) {
	path := []string{"spec"}
	if k.Group == GroupHelm {
		path = []string{"spec", "values"}
	}
	for _, f := range immutableFields {
		if f.app != app {
			continue
		}
		was, err := fieldValue(old, path, f)
		if err != nil {
			return Decision{}, fmt.Errorf("cannot read the old %s: %w", k.Kind, err)
		}
		is, err := fieldValue(obj, path, f)
		if err != nil {
			return Decision{}, fmt.Errorf("cannot read %s: %w", k.Kind, err)
		}
		if was != is {
			return deny(PolicyImmutableFields, f.composed(was, is), f.static()), nil
		}
	}
	return allow(), nil
}

// applicationOf names the application an object carries: the kind of an
// application object, or for a HelmRelease the application its labels
// name, the old object's first, so that dropping the labels in the same
// update changes nothing. "" is an object that is not ours.
func applicationOf(k metav1.GroupVersionKind, old, obj object) (string, error) {
	if k.Group == GroupApps {
		return k.Kind, nil
	}
	for _, o := range []object{old, obj} {
		app, err := labelledApplication(o)
		if err != nil || app != "" {
			return app, err
		}
	}
	return "", nil
}

// labelledApplication is the application o's labels name, or "".
func labelledApplication(o object) (string, error) {
	labels, err := o.stringMap("metadata", "labels")
	if err != nil {
		return "", err
	}
	kind := labels[LabelApplicationKind]
	if labels[LabelApplicationGroup] == GroupApps && (kind == KindKubernetes || kind == KindKubernetesNodes) {
		return kind, nil
	}
	return "", nil
}

// fieldValue is the field's value in the values of o, which sit at path;
// unset, null and "" stand for its default.
func fieldValue(o object, path []string, f immutableField) (string, error) {
	if _, err := o.obj(path...); err != nil {
		return "", err
	}
	s, ok, err := o.str(append(slices.Clone(path), f.field)...)
	if err != nil {
		return "", err
	}
	if !ok || s == "" {
		return f.def, nil
	}
	return s, nil
}

// The CEL of proxmox-kubernetes-immutable-fields.

// celLabels is the labels of o (object or oldObject), {} when it has none.
func celLabels(o string) string {
	return `(` + o + ` != null && has(` + o + `.metadata.labels) ? ` + o + `.metadata.labels : {})`
}

// celApplicationOf is the application the labels l name, or ” when they
// name none of ours (applicationOf).
func celApplicationOf(l string) string {
	return strings.NewReplacer("{L}", l, "{G}", LabelApplicationGroup, "{K}", LabelApplicationKind).Replace(
		`('{G}' in {L} && {L}['{G}'] == '` + GroupApps + `' && '{K}' in {L} && {L}['{K}'] in ['` + KindKubernetes + `', '` + KindKubernetesNodes + `'] ? {L}['{K}'] : '')`)
}

// celValues is the values of o: the spec of an application, spec.values of
// a HelmRelease; {} when absent.
func celValues(o string) string {
	return `(` + o + ` == null ? {} : request.kind.group == '` + GroupHelm + `' ` +
		`? (has(` + o + `.spec) && has(` + o + `.spec.values) ? ` + o + `.spec.values : {}) ` +
		`: (has(` + o + `.spec) ? ` + o + `.spec : {}))`
}

// celField is field f of the values v, its default when unset, null or ”
// (fieldValue).
func celField(v string, f immutableField) string {
	x := v + `.` + f.field
	return `(has(` + x + `) && ` + x + ` != null && ` + x + ` != '' ? ` + x + ` : '` + f.def + `')`
}

func celVarName(prefix, field string) string {
	return prefix + strings.ToUpper(field[:1]) + field[1:]
}

func immutableFieldsPolicy() admissionregistrationv1.ValidatingAdmissionPolicy {
	updateOnly := []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	p := policy(PolicyImmutableFields, []admissionregistrationv1.NamedRuleWithOperations{
		rule(GroupApps, "*", updateOnly, "kuberneteses", "kubernetesnodeses"),
		rule(GroupHelm, "*", updateOnly, "helmreleases"),
	})
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{
		Name: "kubernetes-application",
		Expression: `request.kind.group == '` + GroupApps + `' || ` +
			celApplicationOf(celLabels("oldObject")) + ` != '' || ` + celApplicationOf(celLabels("object")) + ` != ''`,
	}}
	p.Spec.Variables = []admissionregistrationv1.Variable{
		variable("oldApp", celApplicationOf(celLabels("oldObject"))),
		variable("app", `request.kind.group == '`+GroupApps+`' ? request.kind.kind : `+
			`(variables.oldApp != '' ? variables.oldApp : `+celApplicationOf(celLabels("object"))+`)`),
		variable("values", celValues("object")),
		variable("oldValues", celValues("oldObject")),
	}
	seen := map[string]bool{}
	for _, f := range immutableFields {
		if !seen[f.field] {
			seen[f.field] = true
			p.Spec.Variables = append(p.Spec.Variables,
				variable(f.field, celField("variables.values", f)),
				variable(celVarName("old", f.field), celField("variables.oldValues", f)))
		}
		was, is := "variables."+celVarName("old", f.field), "variables."+f.field
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{
			Expression:        `variables.app != '` + f.app + `' || ` + was + ` == ` + is,
			Message:           f.static(),
			MessageExpression: `'` + f.head + ` ("' + ` + was + ` + '" to "' + ` + is + ` + '"): ` + f.tail + `'`,
		})
	}
	p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{
		Expression: `request.kind.group != '` + GroupHelm + `' || variables.oldApp == '' || ` +
			celApplicationOf(celLabels("object")) + ` == variables.oldApp`,
		Message: labelsRule.static(),
		MessageExpression: `'` + labelsRule.head + ` ("' + variables.oldApp + '" to "' + ` + celApplicationOf(celLabels("object")) +
			` + '"): ` + labelsRule.tail + `'`,
	})
	return p
}
