package admission

import (
	"testing"
)

func ann(kv ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func vmCases() map[string]pairCase {
	vmIn := func(obj m) input { return input{kind: gvkVM, ns: owning(), obj: obj} }
	upd := func(obj, old m) input {
		return input{op: OperationUpdate, kind: gvkVM, ns: owning(), obj: obj, old: old}
	}
	return map[string]pairCase{
		"VMForeignMultus": {
			reason:   "a multus network qualified with another namespace",
			refused:  vmIn(vm(l{multus("tenant-b/net", false)}, nil)),
			admitted: vmIn(vm(l{multus("tenant-a/net", false)}, nil)),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, "tenant-b/net"),
		},
		"VMUnqualifiedDefaultNetwork": {
			reason:   "Multus looks an unqualified default network up in kube-system",
			refused:  vmIn(vm(l{multus("net", true)}, nil)),
			admitted: vmIn(vm(l{multus("tenant-a/net", true)}, nil)),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, "net"),
		},
		"VMUnqualifiedNetworkIsOwn": {
			reason:   "an unqualified secondary network is the VM's own; a foreign one is not",
			refused:  vmIn(vm(l{multus("tenant-b/net", false)}, nil)),
			admitted: vmIn(vm(l{multus("net", false)}, nil)),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, "tenant-b/net"),
		},
		"VMNetworksAnnotation": {
			reason:   "KubeVirt copies the template's annotations onto the launcher pod",
			refused:  vmIn(vm(nil, ann(AnnotationNetworks, "tenant-b/net"))),
			admitted: vmIn(vm(nil, ann(AnnotationNetworks, "net"))),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, AnnotationNetworks+"=tenant-b/net"),
		},
		"VMDefaultNetworkAnnotation": {
			reason:   "v1.multus-cni.io/default-network must be <namespace>/<name>",
			refused:  vmIn(vm(nil, ann(AnnotationDefaultNetwork, "net@eth0"))),
			admitted: vmIn(vm(nil, ann(AnnotationDefaultNetwork, "tenant-a/net@eth0"))),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, AnnotationDefaultNetwork+"=net@eth0"),
		},
		"VMSubnetPin": {
			reason:   "a logical switch pin is refused unless it names a default switch of the namespace",
			refused:  vmIn(vm(nil, ann(AnnotationLogicalSwitch, "subnet-a"))),
			admitted: vmIn(vm(nil, ann(AnnotationLogicalSwitch, "ovn-default"))),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, AnnotationLogicalSwitch+"=subnet-a"),
		},
		"VMProviderPin": {
			reason:   "<provider>.kubernetes.io/logical_switch pins an attachment's subnet, even to a default switch",
			refused:  vmIn(vm(nil, ann("subnet-a.tenant-a.ovn.kubernetes.io/logical_switch", "ovn-default"))),
			admitted: vmIn(vm(nil, ann("subnet-a.tenant-a.ovn.kubernetes.io/logical-switch", "ovn-default"))),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, "subnet-a.tenant-a.ovn.kubernetes.io/logical_switch=ovn-default"),
		},
		"VMIForeignMultus": {
			reason:   "a VMI carries its networks in spec.networks",
			refused:  input{kind: gvkVMI, ns: owning(), obj: vmi(l{multus("tenant-b/net", false)}, nil)},
			admitted: input{kind: gvkVMI, ns: owning(), obj: vmi(l{multus("tenant-a/net", false)}, nil)},
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, "tenant-b/net"),
		},
		"VMIAnnotation": {
			reason:   "a VMI carries the annotations in its own metadata",
			refused:  input{kind: gvkVMI, ns: owning(), obj: vmi(nil, ann(AnnotationNetworks, `[{"name":"x","namespace":"tenant-b"}]`))},
			admitted: input{kind: gvkVMI, ns: owning(), obj: vmi(nil, ann(AnnotationNetworks, `[{"name":"x","namespace":"tenant-a"}]`))},
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, AnnotationNetworks+`=[{"name":"x","namespace":"tenant-b"}]`),
		},
		"VMUpdateKeepsOldNetwork": {
			reason:   "on UPDATE a network the old object already had passes; a new one is judged",
			refused:  upd(vm(l{multus("tenant-b/new", false)}, nil), vm(l{multus("tenant-b/net", false)}, nil)),
			admitted: upd(vm(l{multus("tenant-b/net", false)}, nil), vm(l{multus("tenant-b/net", false)}, nil)),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, "tenant-b/new"),
		},
		"VMUpdateDefaultFlagChanged": {
			reason:   "turning an old network into the default network is a new entry",
			refused:  upd(vm(l{multus("net", true)}, nil), vm(l{multus("net", false)}, nil)),
			admitted: upd(vm(l{multus("net", false)}, nil), vm(l{multus("net", false)}, nil)),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, "net"),
		},
		"VMUpdateChangedAnnotation": {
			reason:   "an annotation is judged again when its value changes",
			refused:  upd(vm(nil, ann(AnnotationNetworks, "tenant-b/other")), vm(nil, ann(AnnotationNetworks, "tenant-b/net"))),
			admitted: upd(vm(nil, ann(AnnotationNetworks, "tenant-b/net")), vm(nil, ann(AnnotationNetworks, "tenant-b/net"))),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, AnnotationNetworks+"=tenant-b/other"),
		},
		"VMBeingDeleted": {
			reason:   "an object being deleted passes, so finalizers can come off",
			refused:  upd(vm(l{multus("tenant-b/new", false)}, nil), vm(nil, nil)),
			admitted: upd(deleting(vm(l{multus("tenant-b/new", false)}, nil)), vm(nil, nil)),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, "tenant-b/new"),
		},
		"VMPlatformNamespace": {
			reason:   "cozy-* namespaces are the platform's",
			refused:  vmIn(in("tenant-b", vm(l{multus("tenant-x/net", false)}, nil))),
			admitted: vmIn(in("cozy-system", vm(l{multus("tenant-x/net", false)}, nil))),
			policy:   PolicyVMAttachments, message: "a VM may attach only network attachment definitions and Kube-OVN subnets of its own namespace (tenant-b; a multus default network as tenant-b/<name>); refused: tenant-x/net",
		},
		"VMSeveralRefused": {
			reason:   "every refused entry is listed, networks first",
			refused:  vmIn(vm(l{multus("tenant-b/net", false)}, ann(AnnotationLogicalSwitch, "x"))),
			admitted: vmIn(vm(l{multus("tenant-a/net", false)}, ann(AnnotationLogicalSwitch, "ovn-default"))),
			policy:   PolicyVMAttachments, message: attachmentMessage(msgVM, "tenant-b/net", AnnotationLogicalSwitch+"=x"),
		},
	}
}

func podCases() map[string]pairCase {
	podIn := func(a map[string]string) input { return input{kind: gvkPod, ns: owning(), obj: pod(a)} }
	upd := func(a, old map[string]string) input {
		return input{op: OperationUpdate, kind: gvkPod, ns: owning(), obj: pod(a), old: pod(old)}
	}
	return map[string]pairCase{
		"PodCommaForm": {
			reason:   "another tenant's network in the comma form",
			refused:  podIn(ann(AnnotationNetworks, "subnet-a, tenant-b/subnet-b@net2")),
			admitted: podIn(ann(AnnotationNetworks, "subnet-a, tenant-a/subnet-b@net2")),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationNetworks+"=subnet-a, tenant-b/subnet-b@net2"),
		},
		"PodJSONForm": {
			reason:   "another tenant's network in the JSON form",
			refused:  podIn(ann(AnnotationNetworks, `[{"name": "subnet-b", "namespace": "tenant-b"}]`)),
			admitted: podIn(ann(AnnotationNetworks, `[{"name": "subnet-b", "namespace": "tenant-a"}]`)),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationNetworks+`=[{"name": "subnet-b", "namespace": "tenant-b"}]`),
		},
		"PodJSONKeyCase": {
			reason:   "Go's JSON decoder matches keys without regard to case",
			refused:  podIn(ann(AnnotationNetworks, `[{"name":"x","NameSpace":"tenant-b"}]`)),
			admitted: podIn(ann(AnnotationNetworks, `[{"name":"x","NameSpace":"tenant-a"}]`)),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationNetworks+`=[{"name":"x","NameSpace":"tenant-b"}]`),
		},
		"PodBackslash": {
			reason:   "a backslash could spell the namespace key with escapes",
			refused:  podIn(ann(AnnotationNetworks, `[{"name":"x","n\u0061mespace":"tenant-b"}]`)),
			admitted: podIn(ann(AnnotationNetworks, `[{"name":"x","nxamespace":"tenant-b"}]`)),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationNetworks+`=[{"name":"x","n\u0061mespace":"tenant-b"}]`),
		},
		"PodLooseCommaEntry": {
			reason:   "spaces around the slash are refused rather than parsed",
			refused:  podIn(ann(AnnotationNetworks, "tenant-a / net")),
			admitted: podIn(ann(AnnotationNetworks, " tenant-a/net ")),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationNetworks+"=tenant-a / net"),
		},
		"PodEmptyEntry": {
			reason:   "an empty entry is refused; an empty value selects nothing",
			refused:  podIn(ann(AnnotationNetworks, ",")),
			admitted: podIn(ann(AnnotationNetworks, "")),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationNetworks+"=,"),
		},
		"PodDefaultNetworkUnqualified": {
			reason:   "the multus default network must be qualified with the own namespace",
			refused:  podIn(ann(AnnotationDefaultNetwork, "net")),
			admitted: podIn(ann(AnnotationDefaultNetwork, "tenant-a/net")),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationDefaultNetwork+"=net"),
		},
		"PodDefaultNetworkJSON": {
			reason:   "the two readers disagree about JSON default networks",
			refused:  podIn(ann(AnnotationDefaultNetwork, `{"name":"net","namespace":"tenant-a"}`)),
			admitted: podIn(ann(AnnotationDefaultNetwork, `tenant-a/net`)),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationDefaultNetwork+`={"name":"net","namespace":"tenant-a"}`),
		},
		"PodPinOnCreate": {
			reason:   "a switch pin is judged on CREATE; kube-ovn-controller writes pins back on UPDATE",
			refused:  podIn(ann(AnnotationLogicalSwitch, "subnet-a")),
			admitted: upd(ann(AnnotationLogicalSwitch, "subnet-a"), nil),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationLogicalSwitch+"=subnet-a"),
		},
		"PodPinOwnSubnet": {
			reason:   "a pin is refused even to the namespace's own subnet; only default switches pass",
			refused:  podIn(ann(AnnotationLogicalSwitch, "ovn-default,subnet-a")),
			admitted: podIn(ann(AnnotationLogicalSwitch, "ovn-default")),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationLogicalSwitch+"=ovn-default,subnet-a"),
		},
		"PodUpdateChangedNetworks": {
			reason:   "network hotplug edits k8s.v1.cni.cncf.io/networks; the new value is judged",
			refused:  upd(ann(AnnotationNetworks, "net,tenant-b/x"), ann(AnnotationNetworks, "net")),
			admitted: upd(ann(AnnotationNetworks, "net,tenant-a/x"), ann(AnnotationNetworks, "net")),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationNetworks+"=net,tenant-b/x"),
		},
		"PodUpdateUnchanged": {
			reason:   "a pod admitted before the policy can still be updated",
			refused:  upd(ann(AnnotationNetworks, "tenant-b/x", "a", "b"), ann(AnnotationNetworks, "tenant-b/y")),
			admitted: upd(ann(AnnotationNetworks, "tenant-b/x", "a", "b"), ann(AnnotationNetworks, "tenant-b/x")),
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationNetworks+"=tenant-b/x"),
		},
		"PodExemptByConfiguration": {
			reason:   "admission.exemptNamespaces lifts the attachment policies",
			refused:  input{kind: gvkPod, ns: plain(), obj: in("tenant-b", pod(ann(AnnotationNetworks, "tenant-c/x")))},
			admitted: input{kind: gvkPod, ns: plain(), obj: in("tenant-exempt", pod(ann(AnnotationNetworks, "tenant-c/x")))},
			policy:   PolicyPodAttachments, message: "a pod may attach only network attachment definitions and Kube-OVN subnets of its own namespace (tenant-b; a multus default network as tenant-b/<name>); refused: k8s.v1.cni.cncf.io/networks=tenant-c/x",
		},
		"PodEgressGatewayNamespace": {
			reason:   "a zone's egress gateway namespace attaches the transit network",
			refused:  input{kind: gvkPod, ns: plain(), obj: in("tenant-b", pod(ann(AnnotationNetworks, "cozy-x/transit")))},
			admitted: input{kind: gvkPod, ns: plain(), obj: in("px-egress", pod(ann(AnnotationNetworks, "cozy-x/transit")))},
			policy:   PolicyPodAttachments, message: "a pod may attach only network attachment definitions and Kube-OVN subnets of its own namespace (tenant-b; a multus default network as tenant-b/<name>); refused: k8s.v1.cni.cncf.io/networks=cozy-x/transit",
		},
		"PodKubeSystem": {
			reason:   "kube-system is exempt",
			refused:  input{kind: gvkPod, ns: plain(), obj: in("tenant-b", pod(ann(AnnotationDefaultNetwork, "x")))},
			admitted: input{kind: gvkPod, ns: plain(), obj: in("kube-system", pod(ann(AnnotationDefaultNetwork, "x")))},
			policy:   PolicyPodAttachments, message: "a pod may attach only network attachment definitions and Kube-OVN subnets of its own namespace (tenant-b; a multus default network as tenant-b/<name>); refused: v1.multus-cni.io/default-network=x",
		},
		"PodReleaseNamespace": {
			reason:   "the package's own namespace is exempt",
			refused:  input{kind: gvkPod, ns: plain(), obj: in("tenant-b", pod(ann(AnnotationDefaultNetwork, "x")))},
			admitted: input{kind: gvkPod, ns: plain(), obj: in(DefaultReleaseNamespace, pod(ann(AnnotationDefaultNetwork, "x")))},
			policy:   PolicyPodAttachments, message: "a pod may attach only network attachment definitions and Kube-OVN subnets of its own namespace (tenant-b; a multus default network as tenant-b/<name>); refused: v1.multus-cni.io/default-network=x",
		},
		"PodMultiLineMessage": {
			reason:   "a refusal echoing a line break falls back to the static message",
			refused:  podIn(ann(AnnotationNetworks, "tenant-b/x,\nnet")),
			admitted: podIn(ann(AnnotationNetworks, "tenant-a/x,\nnet")),
			policy:   PolicyPodAttachments, message: msgPod,
		},
		"PodBeingDeleted": {
			reason:   "a pod being deleted passes",
			refused:  upd(ann(AnnotationNetworks, "tenant-b/x"), nil),
			admitted: input{op: OperationUpdate, kind: gvkPod, ns: owning(), obj: deleting(pod(ann(AnnotationNetworks, "tenant-b/x"))), old: pod(nil)},
			policy:   PolicyPodAttachments, message: attachmentMessage(msgPod, AnnotationNetworks+"=tenant-b/x"),
		},
	}
}

func TestVMAttachments(t *testing.T)  { runPairs(t, testConfig(), vmCases()) }
func TestPodAttachments(t *testing.T) { runPairs(t, testConfig(), podCases()) }

func TestAttachmentPoliciesSwitchedOff(t *testing.T) {
	cfg := testConfig()
	cfg.VMAttachments, cfg.PodAttachments = false, false
	v := mustValidator(t, cfg)
	for _, in := range []input{
		{kind: gvkVM, ns: owning(), obj: vm(l{multus("tenant-b/net", false)}, nil)},
		{kind: gvkPod, ns: owning(), obj: pod(ann(AnnotationNetworks, "tenant-b/x"))},
	} {
		if d, err := v.Review(in.request(t), in.ns); err != nil || !d.Allowed {
			t.Errorf("%s with its policy off must be admitted: %+v %v", in.kind.Kind, d, err)
		}
	}
}

func TestMalformedObjects(t *testing.T) {
	v := mustValidator(t, testConfig())
	cases := map[string]struct {
		reason string
		req    Request
	}{
		"NotJSON":      {reason: "the object must be JSON", req: Request{Operation: OperationCreate, Kind: gvkPod, Namespace: tenant, Object: []byte("{")}},
		"NoObject":     {reason: "CREATE carries an object", req: Request{Operation: OperationCreate, Kind: gvkPod, Namespace: tenant}},
		"VLANIsString": {reason: "a VLAN is an integer", req: Request{Operation: OperationCreate, Kind: gvkMachineV1, Namespace: tenant, Object: js(t, machineV1(m{"bridge": "vmbr1", "vlan": "70"}))}},
		"Annotation":   {reason: "annotations are strings", req: Request{Operation: OperationCreate, Kind: gvkPod, Namespace: tenant, Object: js(t, m{"metadata": m{"annotations": m{"a": 1}}})}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Review(tc.req, plain()); err == nil {
				t.Errorf("%s: want ErrMalformedObject", tc.reason)
			} else if !errorsIs(err, ErrMalformedObject) {
				t.Errorf("%s: %v is not ErrMalformedObject", tc.reason, err)
			}
		})
	}
}
