package admission_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/admission"
)

func ExampleValidator_Review() {
	cfg := admission.DefaultConfig()
	cfg.Zones = []admission.Zone{{Name: "default", Bridge: "vmbr70", UplinkVLAN: 70, UplinkBridges: []string{"vmbr0"}}}
	v, err := admission.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	ns := &admission.Namespace{Name: "tenant-a", Annotations: map[string]string{
		admission.AnnotationProxmoxNetworks: "vmbr70/101/subnet-3f2a9c1e",
	}}
	machine := `{"spec":{"network":{"default":{"bridge":"vmbr70","vlan":102,
		"ipv4PoolRef":{"apiGroup":"ipam.cluster.x-k8s.io","kind":"InClusterIPPool","name":"subnet-0b1c2d3e"}}}}}`
	d, err := v.Review(admission.Request{
		Operation: "CREATE",
		Kind:      metav1.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Kind: "ProxmoxMachine"},
		Namespace: "tenant-a",
		Object:    []byte(machine),
	}, ns)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Allowed, d.Policy)
	fmt.Println(d.Message)
	// Output:
	// false proxmox-network-machine-binding
	// a NIC on a Proxmox network zone bridge must use a Proxmox network of this namespace (vmbr70/101/subnet-3f2a9c1e); got vmbr70/102/subnet-0b1c2d3e
}

func ExampleParseNetworks() {
	sel, err := admission.ParseNetworks("subnet-a, tenant-b/subnet-b@net2")
	fmt.Println(sel.Entries, err, sel.Foreign("tenant-a"))
	_, err = admission.ParseNetworks("tenant-a / subnet-a")
	fmt.Println(err)
	// Output:
	// [subnet-a tenant-b/subnet-b@net2] <nil> true
	// entry 0 "tenant-a / subnet-a" is not [<namespace>/]<name>[@<interface>] with DNS labels
}

func ExamplePolicies() {
	set, err := admission.Policies(admission.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, p := range set.Policies {
		fmt.Println(p.Name, *p.Spec.FailurePolicy, set.Bindings[i].Spec.ValidationActions)
	}
	// Output:
	// proxmox-network-machine-binding Fail [Deny]
	// proxmox-network-vm-attachments Fail [Deny]
	// proxmox-network-pod-attachments Fail [Deny]
	// proxmox-kubernetes-immutable-fields Fail [Deny]
}
