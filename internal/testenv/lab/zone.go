package lab

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
)

// The lab's network zone: with Options.Controller the lab starts with the
// ProxmoxNetworkZone Zone on the trunk bridge every node of its Proxmox
// VE has (pvelab.Bridge, VLAN-aware, IDs 2-4094), handing out the VLANs
// ZoneVLANs, over the Kube-OVN provider network ZoneProviderNetwork, which
// the lab reports ready as Kube-OVN would on trunk nodes. A tenant's VPC
// subnet with `proxmox: {}` (hack/lab.sh apply) takes its VLAN from it.
// The VLANs are apart from VLAN 100, which testdata/nodes.yaml's pool
// uses on the same bridge without a zone.
const (
	Zone                = "lab"
	ZoneProviderNetwork = "labtrunk"
	ZoneVLANs           = "200-299"
)

// kubeOVNInterval is how often the lab plays Kube-OVN's part.
const kubeOVNInterval = 500 * time.Millisecond

// startZone creates what the platform holds before a tenant's first
// Proxmox-backed subnet: the provider network (ready) and the zone on the
// trunk bridge; and plays, until the lab stops, the part of
// kube-ovn-controller the controller waits for (sim.World: a Subnet is
// Ready once its Vlan exists, a Vlan lists its subnets). The in-cluster
// IPAM provider runs for real.
func (l *Lab) startZone(ctx context.Context) error {
	c, err := client.New(l.Mgmt, client.Options{Scheme: sim.Scheme()})
	if err != nil {
		return err
	}
	pn := sim.ProviderNetwork(ZoneProviderNetwork, true)
	status := pn.Status
	if err := c.Create(ctx, pn); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cannot create the provider network %s: %w", ZoneProviderNetwork, err)
	}
	pn.Status = status
	if err := c.Status().Update(ctx, pn); err != nil {
		return fmt.Errorf("cannot report the provider network %s ready: %w", ZoneProviderNetwork, err)
	}
	zone := sim.Zone(Zone, pvelab.Bridge, ZoneProviderNetwork, ZoneVLANs)
	if err := c.Create(ctx, zone); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cannot create the ProxmoxNetworkZone %s: %w", Zone, err)
	}
	l.log(fmt.Sprintf("ProxmoxNetworkZone %s: bridge %s, VLANs %s, provider network %s", Zone, pvelab.Bridge, ZoneVLANs, ZoneProviderNetwork))
	l.playKubeOVN(c)
	return nil
}

// playKubeOVN runs sim.World's Kube-OVN every kubeOVNInterval until the
// lab stops, logging an error once until it changes.
func (l *Lab) playKubeOVN(c client.Client) {
	world := sim.World{PruneSubnets: true, IPAMProvider: true}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		last := ""
		tick := time.NewTicker(kubeOVNInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			msg := ""
			if _, err := world.React(ctx, c); err != nil && ctx.Err() == nil {
				msg = err.Error()
			}
			if msg != last && msg != "" {
				l.log("Kube-OVN's part: " + msg)
			}
			last = msg
		}
	})
	l.stops = append(l.stops, func() error {
		cancel()
		wg.Wait()
		return nil
	})
}
