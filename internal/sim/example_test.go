package sim_test

import (
	"context"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

func ExampleRun() {
	s, err := sim.ParseScenario([]byte(`
steps:
- apply:
    objects: |
      apiVersion: proxmox.cozystack.io/v1alpha1
      kind: ProxmoxNetworkZone
      metadata: {name: zone-a}
      spec: {bridge: vmbr1, providerNetwork: pxtenant, vlanRanges: ["100-101"]}
- converge: true
- expect:
  - {apiVersion: proxmox.cozystack.io/v1alpha1, kind: ProxmoxNetworkZone, name: zone-a,
     conditions: {Ready: False/ProviderNetworkNotFound}, fields: {status.freeVLANs: "2"}}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := sim.Run(context.Background(), s, ".")
	fmt.Println(len(rep.Objects), rep.Failures, err)
	// Output: 1 [] <nil>
}
