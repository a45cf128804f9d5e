package capmoxrender_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

func ExampleRenderNodes() {
	pool := []byte(`apiVersion: apps.cozystack.io/v1alpha1
kind: KubernetesNodes
metadata: {name: prod-md0, namespace: tenant-a}
spec:
  cluster: prod
  substrate: proxmox
  version: v1.35.2
  resources: {cpu: 2500m, memory: 3G}
  proxmox:
    templateTags: [cozystack, talos]
    network: {bridge: vmbr0, vlan: 20}
    pool: tenant-demo
    dnsServers: [1.1.1.1]
`)
	n, err := capmoxrender.ParseKubernetesNodes(pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{Capmox: capmoxrender.CapmoxV07})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Println(o.GetKind())
	}
	spec := objs[0].Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	fmt.Println("numCores", spec["numCores"], "memoryMiB", spec["memoryMiB"])
	// Output:
	// ProxmoxMachineTemplate
	// TalosConfigTemplate
	// MachineDeployment
	// MachineHealthCheck
	// ServiceAccount
	// Role
	// RoleBinding
	// Job
	// numCores 3 memoryMiB 2864
}

func ExampleRefusalError() {
	k := capmoxrender.Kubernetes{Name: "prod", Namespace: "tenant-a", Spec: capmoxrender.KubernetesSpec{Substrate: "proxmox", Version: "v1.35.2",
		Proxmox: capmoxrender.ClusterProxmox{DNSServers: []string{"1.1.1.1"}}}}
	_, err := capmoxrender.RenderCluster(context.Background(), k, capmoxrender.Options{})
	var r *capmoxrender.RefusalError
	fmt.Println(errors.As(err, &r), r.Field)
	fmt.Println(err)
	// Output:
	// true proxmox.ipv4Config.addresses
	// substrate proxmox requires proxmox.ipv4Config.addresses: capmox allocates static addresses and has no DHCP mode
}

func ExampleControllerVMID() {
	fmt.Println(capmoxrender.ControllerVMID("tenant-a", "kubernetes-prod"))
	// Output: 810754
}
