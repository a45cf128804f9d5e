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

// immutableFieldsRule refuses an UPDATE that changes an immutable field of
// a Kubernetes or KubernetesNodes application, judged on the application
// itself or on the HelmRelease that stores it.
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
	path := []string{"spec"}
	if req.Kind.Group == GroupHelm {
		path = []string{"spec", "values"}
	}
	for _, f := range immutableFields {
		if f.app != app {
			continue
		}
		was, err := fieldValue(old, path, f)
		if err != nil {
			return Decision{}, fmt.Errorf("cannot read the old %s: %w", req.Kind.Kind, err)
		}
		is, err := fieldValue(obj, path, f)
		if err != nil {
			return Decision{}, fmt.Errorf("cannot read %s: %w", req.Kind.Kind, err)
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
		labels, err := o.stringMap("metadata", "labels")
		if err != nil {
			return "", err
		}
		kind := labels[LabelApplicationKind]
		if labels[LabelApplicationGroup] == GroupApps && (kind == KindKubernetes || kind == KindKubernetesNodes) {
			return kind, nil
		}
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
	return p
}
