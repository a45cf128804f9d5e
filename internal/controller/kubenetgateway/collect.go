package kubenetgateway

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// Counter is the part of a prometheus.Counter the collector uses.
type Counter interface{ Add(float64) }

// Collector deletes the HA_Chassis_Groups whose ProxmoxNetwork is gone.
type Collector struct {
	// NB reaches the northbound database.
	NB NB
	// Reader reads ProxmoxNetworks past any cache: a group is deleted only
	// when the API server answers NotFound for its network.
	Reader client.Reader
	// Collected counts deleted groups (cozy_proxmox_gateway_groups_collected_total).
	Collected Counter
	// Errors counts failed collections (cozy_proxmox_gateway_nb_errors_total).
	Errors Counter
	// Log receives one line per deleted group and per failed collection.
	Log logr.Logger
	// Clock paces the loop; nil means the real clock.
	Clock clock.WithTicker
}

// Once collects one time and returns what it deleted.
func (c *Collector) Once(ctx context.Context) (ovngateway.Collected, error) {
	exists := func(ctx context.Context, namespace, name string) (bool, error) {
		err := c.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &v1alpha1.ProxmoxNetwork{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		}
		return false, fmt.Errorf("cannot get ProxmoxNetwork %s/%s: %w", namespace, name, err)
	}
	out, err := c.NB.Collect(ctx, exists)
	if c.Collected != nil && len(out.Deleted) > 0 {
		c.Collected.Add(float64(len(out.Deleted)))
	}
	for _, g := range out.Deleted {
		c.Log.Info("deleted an OVN HA_Chassis_Group whose ProxmoxNetwork is gone", "group", g)
	}
	if err != nil {
		return out, fmt.Errorf("cannot collect OVN HA_Chassis_Groups: %w", err)
	}
	return out, nil
}

// Run collects at once and then every ovngateway.ResyncPeriod, or after
// ovngateway.RetryAfter when a collection failed, until ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	for {
		wait := ovngateway.ResyncPeriod
		if _, err := c.Once(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if c.Errors != nil {
				c.Errors.Add(1)
			}
			c.Log.Error(err, "garbage collection of OVN HA_Chassis_Groups failed; retrying", "after", ovngateway.RetryAfter.String())
			wait = ovngateway.RetryAfter
		}
		t := clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}
