package vpcrender_test

import (
	"fmt"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

func ExampleRender() {
	r, err := vpcrender.Render(vpcrender.Spec{
		Namespace: "tenant-test",
		Name:      "net",
		Subnets: []vpcrender.VPCSubnet{
			{Name: "private", CIDR: "10.208.64.0/24", Proxmox: &vpcrender.ProxmoxSubnet{}},
		},
		Zones: []vpcrender.Zone{{Name: "default", ProviderNetwork: "pxtenant"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range r.Objects {
		switch v := o.(type) {
		case *kubeovnv1.Subnet:
			fmt.Println("Subnet", v.Name, v.Spec.Gateway, v.Spec.ExcludeIps)
		case *ipamv1alpha2.InClusterIPPool:
			fmt.Println("InClusterIPPool", v.Name, v.Spec.Addresses)
		case *v1alpha1.ProxmoxNetwork:
			fmt.Println("ProxmoxNetwork", v.Name, v.Spec.Zone)
		}
	}
	// Output:
	// Subnet subnet-b10ab7f7 10.208.64.1 [10.208.64.64..10.208.64.191]
	// InClusterIPPool subnet-b10ab7f7 [10.208.64.64-10.208.64.191]
	// ProxmoxNetwork subnet-b10ab7f7 default
}

func ExampleRender_refusal() {
	_, err := vpcrender.Render(vpcrender.Spec{
		Namespace: "tenant-test",
		Name:      "net",
		Subnets:   []vpcrender.VPCSubnet{{Name: "plain", CIDR: "172.16.0.0/24"}},
		Routes:    []vpcrender.Route{{CIDR: "10.208.128.0/24", NextHopIP: "10.70.0.12"}},
	})
	fmt.Println(err)
	// Output: route to 10.208.128.0/24: next hop 10.70.0.12 is outside every subnet of this VPC
}
