package v1alpha1_test

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// TestGatewayMTUOf: an explicit gatewayMTU wins (0 included), else the
// zone MTU (1500 when unset) minus the Geneve allowance, never below IPv4's
// minimum MTU.
func TestGatewayMTUOf(t *testing.T) {
	cases := map[string]struct {
		mtu, gatewayMTU *int32
		want            int32
	}{
		"Default":       {want: 1400},
		"FromZoneMTU":   {mtu: ptr.To[int32](9000), want: 8900},
		"ExplicitWins":  {mtu: ptr.To[int32](9000), gatewayMTU: ptr.To[int32](1442), want: 1442},
		"ExplicitOff":   {gatewayMTU: ptr.To[int32](0), want: 0},
		"SmallZoneMTU":  {mtu: ptr.To[int32](576), want: 476},
		"BelowIPv4Min":  {mtu: ptr.To[int32](160), want: 0},
		"AtTheBoundary": {mtu: ptr.To[int32](168), want: 68},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := v1alpha1.GatewayMTUOf(v1alpha1.ProxmoxNetworkZoneSpec{MTU: tc.mtu, GatewayMTU: tc.gatewayMTU})
			if got != tc.want {
				t.Errorf("GatewayMTUOf(mtu %v, gatewayMTU %v) = %d, want %d", ptr.Deref(tc.mtu, -1), ptr.Deref(tc.gatewayMTU, -1), got, tc.want)
			}
		})
	}
}
