package admission

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Policy names, shared by the ValidatingAdmissionPolicies, their bindings
// and the decisions of the Go validator.
const (
	PolicyMachineBinding = "proxmox-network-machine-binding"
	PolicyVMAttachments  = "proxmox-network-vm-attachments"
	PolicyPodAttachments = "proxmox-network-pod-attachments"
)

// API groups and kinds the policies judge.
const (
	GroupCAPMOX     = "infrastructure.cluster.x-k8s.io"
	GroupKubeVirt   = "kubevirt.io"
	KindMachine     = "ProxmoxMachine"
	KindTemplate    = "ProxmoxMachineTemplate"
	KindVM          = "VirtualMachine"
	KindVMI         = "VirtualMachineInstance"
	KindPod         = "Pod"
	OperationCreate = "CREATE"
	OperationUpdate = "UPDATE"
	platformPrefix  = "cozy-"
)

// maxMessageBytes is the longest message a kube-apiserver takes from a
// messageExpression; a longer one falls back to the static message.
const maxMessageBytes = 5 * 1024

// Request is what the rules read of an admission request.
type Request struct {
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation string
	// Kind is the object's group, version and kind as sent.
	Kind      metav1.GroupVersionKind
	Namespace string
	// Object and OldObject are the JSON of the object (nil when absent).
	Object    []byte
	OldObject []byte
}

// Namespace is the request's namespace as the rules see it.
type Namespace struct {
	Name        string
	Annotations map[string]string
}

// Decision is the answer to one request.
type Decision struct {
	Allowed bool
	// Policy is the policy that refused the request; empty when allowed.
	Policy string
	// Message says why it was refused.
	Message string
}

func allow() Decision { return Decision{Allowed: true} }

func deny(policy, composed, static string) Decision {
	return Decision{Policy: policy, Message: finalMessage(composed, static)}
}

// finalMessage picks the message the way a kube-apiserver does for a
// validation with messageExpression and message: the composed text, trimmed,
// unless it is empty, longer than 5 KiB or spans lines; then the static one.
func finalMessage(composed, static string) string {
	m := strings.TrimSpace(composed)
	if len(m) > maxMessageBytes || strings.Contains(m, "\n") {
		m = ""
	}
	if m == "" {
		m = strings.TrimSpace(static)
	}
	return m
}

// Validator runs the four policy sets in Go. It holds no state besides its
// configuration and is safe for concurrent use.
type Validator struct {
	cfg           Config
	exempt        map[string]bool
	zoneBridges   map[string]bool
	uplinkBridges map[string]bool
	uplinkVLANs   map[int64]bool
}

// New checks cfg and returns a Validator for it.
func New(cfg Config) (*Validator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cannot build admission rules: %w", err)
	}
	v := &Validator{cfg: cfg, exempt: set(cfg.exemptNamespaces()), zoneBridges: set(cfg.zoneBridges()),
		uplinkBridges: set(cfg.uplinkBridges()), uplinkVLANs: map[int64]bool{}}
	for _, id := range cfg.uplinkVLANs() {
		v.uplinkVLANs[int64(id)] = true
	}
	return v, nil
}

// Config returns the configuration the validator was built from.
func (v *Validator) Config() Config { return v.cfg }

func set(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

// Review decides one request. ns is the request's namespace, nil when it
// does not exist. An object the rules cannot read is an error
// (ErrMalformedObject); requests no policy matches are allowed.
func (v *Validator) Review(req Request, ns *Namespace) (Decision, error) {
	if !v.judges(req) {
		return allow(), nil
	}
	if holdsValues(req.Kind) {
		return v.immutableFieldsRule(req)
	}
	switch req.Kind.Kind {
	case KindMachine, KindTemplate:
		return v.machineBinding(req, ns)
	case KindVM, KindVMI:
		return v.vmAttachments(req, ns)
	}
	return v.podAttachments(req, ns)
}

// judges reports whether some enabled policy decides req, so a namespace
// is read only when it matters.
func (v *Validator) judges(req Request) bool {
	switch {
	case holdsValues(req.Kind):
		return v.cfg.ImmutableFields && req.Operation == OperationUpdate
	case req.Kind.Group == GroupCAPMOX && (req.Kind.Kind == KindMachine || req.Kind.Kind == KindTemplate):
		return v.cfg.MachineBinding && req.Operation == OperationCreate
	case req.Kind.Group == GroupKubeVirt && (req.Kind.Kind == KindVM || req.Kind.Kind == KindVMI):
		return v.cfg.VMAttachments && v.attachmentApplies(req)
	case req.Kind.Group == "" && req.Kind.Version == "v1" && req.Kind.Kind == KindPod:
		return v.cfg.PodAttachments && v.attachmentApplies(req)
	}
	return false
}

// readsNamespace reports whether deciding req needs its namespace.
func (v *Validator) readsNamespace(req Request) bool {
	return v.judges(req) && req.Namespace != "" && !holdsValues(req.Kind)
}

// attachmentApplies holds the attachment policies' match conditions: CREATE
// or UPDATE outside the platform's namespaces. Whether the object is being
// deleted is checked once it is decoded.
func (v *Validator) attachmentApplies(req Request) bool {
	if req.Operation != OperationCreate && req.Operation != OperationUpdate {
		return false
	}
	return !strings.HasPrefix(req.Namespace, platformPrefix) && !v.exempt[req.Namespace]
}

// Exempt reports whether the attachment policies skip namespace ns.
func (v *Validator) Exempt(ns string) bool {
	return strings.HasPrefix(ns, platformPrefix) || v.exempt[ns]
}

// decodePair decodes the object and the old object of a request.
func decodePair(req Request) (object, object, error) {
	obj, err := decodeObject(req.Object)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read %s: %w", req.Kind.Kind, err)
	}
	if obj == nil {
		return nil, nil, fmt.Errorf("cannot read %s: %w: the request carries no object", req.Kind.Kind, ErrMalformedObject)
	}
	old, err := decodeObject(req.OldObject)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the old %s: %w", req.Kind.Kind, err)
	}
	return obj, old, nil
}

func nsAnnotation(ns *Namespace, key string) (string, bool) {
	if ns == nil || ns.Annotations == nil {
		return "", false
	}
	v, ok := ns.Annotations[key]
	return v, ok
}

// defaultSwitches lists the namespace's default Kube-OVN switches.
func defaultSwitches(ns *Namespace) []string {
	v, ok := nsAnnotation(ns, AnnotationLogicalSwitch)
	if !ok {
		return nil
	}
	return strings.Split(v, ",")
}
