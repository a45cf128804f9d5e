package admission

import (
	"sort"
	"strings"
)

// Static messages of the attachment policies; the composed ones add the
// namespace and what was refused.
const (
	msgVM  = "a VM may attach only network attachment definitions and Kube-OVN subnets of its own namespace"
	msgPod = "a pod may attach only network attachment definitions and Kube-OVN subnets of its own namespace"
)

// composedAttachmentMessage is the refusal as the API server shows the
// policy's messageExpression: without trailing whitespace, which a refused
// value may end with.
func composedAttachmentMessage(static, ns string, refused []string) string {
	return strings.TrimSpace(static + " (" + ns + "; a multus default network as " + ns + "/<name>); refused: " + strings.Join(refused, ", "))
}

// multusNetwork is a KubeVirt network of type multus.
type multusNetwork struct {
	name string
	def  bool
}

// foreign: a default network must be qualified with the own namespace (an
// unqualified one is looked up in kube-system); another network may be
// unqualified or qualified with the own namespace.
func (m multusNetwork) foreign(ns string) bool {
	own := strings.HasPrefix(m.name, ns+"/")
	if m.def {
		return !own
	}
	return strings.Contains(m.name, "/") && !own
}

func multusNetworks(o object, vm bool) ([]multusNetwork, error) {
	path := []string{"spec", "networks"}
	if vm {
		path = []string{"spec", "template", "spec", "networks"}
	}
	nets, err := o.list(path...)
	if err != nil {
		return nil, err
	}
	var out []multusNetwork
	for _, n := range nets {
		name, ok, err := n.str("multus", "networkName")
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		def, err := n.boolean("multus", "default")
		if err != nil {
			return nil, err
		}
		out = append(out, multusNetwork{name: name, def: def})
	}
	return out, nil
}

// refusedAnnotations returns the keys, sorted, of new or changed annotations
// that reach outside ns. Pins are judged only when judgePins is set.
func refusedAnnotations(ann, old map[string]string, ns string, switches []string, judgePins bool) []string {
	var out []string
	for k, val := range ann {
		if prev, ok := old[k]; ok && prev == val {
			continue
		}
		var bad bool
		switch k {
		case AnnotationNetworks:
			bad = foreignNetworks(val, ns)
		case AnnotationDefaultNetwork:
			bad = foreignDefaultNetwork(val, ns)
		default:
			bad = judgePins && isSubnetPin(k) && !pinAllowed(k, val, switches)
		}
		if bad {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func annotationPairs(keys []string, ann map[string]string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+ann[k])
	}
	return out
}

// vmAttachments is proxmox-network-vm-attachments: spec networks and the
// annotations KubeVirt copies onto the launcher pod stay in the namespace.
func (v *Validator) vmAttachments(req Request, ns *Namespace) (Decision, error) {
	obj, old, err := decodePair(req)
	if err != nil {
		return Decision{}, err
	}
	if obj.has("metadata", "deletionTimestamp") {
		return allow(), nil
	}
	vm := req.Kind.Kind == KindVM
	nets, err := multusNetworks(obj, vm)
	if err != nil {
		return Decision{}, err
	}
	oldNets, err := multusNetworks(old, vm)
	if err != nil {
		return Decision{}, err
	}
	annPath := []string{"metadata", "annotations"}
	if vm {
		annPath = []string{"spec", "template", "metadata", "annotations"}
	}
	ann, err := obj.stringMap(annPath...)
	if err != nil {
		return Decision{}, err
	}
	oldAnn, err := old.stringMap(annPath...)
	if err != nil {
		return Decision{}, err
	}
	var refused []string
	for _, n := range nets {
		if n.foreign(req.Namespace) && !containsNetwork(oldNets, n) {
			refused = append(refused, n.name)
		}
	}
	keys := refusedAnnotations(ann, oldAnn, req.Namespace, defaultSwitches(ns), true)
	refused = append(refused, annotationPairs(keys, ann)...)
	if len(refused) == 0 {
		return allow(), nil
	}
	return deny(PolicyVMAttachments, composedAttachmentMessage(msgVM, req.Namespace, refused), msgVM), nil
}

func containsNetwork(list []multusNetwork, n multusNetwork) bool {
	for _, m := range list {
		if m == n {
			return true
		}
	}
	return false
}

// podAttachments is proxmox-network-pod-attachments. Logical switch pins
// are judged on CREATE only: kube-ovn-controller writes them back onto every
// pod it allocates.
func (v *Validator) podAttachments(req Request, ns *Namespace) (Decision, error) {
	obj, old, err := decodePair(req)
	if err != nil {
		return Decision{}, err
	}
	if obj.has("metadata", "deletionTimestamp") {
		return allow(), nil
	}
	ann, err := obj.stringMap("metadata", "annotations")
	if err != nil {
		return Decision{}, err
	}
	oldAnn, err := old.stringMap("metadata", "annotations")
	if err != nil {
		return Decision{}, err
	}
	keys := refusedAnnotations(ann, oldAnn, req.Namespace, defaultSwitches(ns), req.Operation == OperationCreate)
	if len(keys) == 0 {
		return allow(), nil
	}
	return deny(PolicyPodAttachments, composedAttachmentMessage(msgPod, req.Namespace, annotationPairs(keys, ann)), msgPod), nil
}
