package kubestore_test

import (
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// TestSplitBrainAPIServer runs the split-brain scenario against a real
// kube-apiserver with the real Kube-OVN CRDs and this repository's CRDs.
func TestSplitBrainAPIServer(t *testing.T) {
	_, c := testenv.StartAPIServer(t, testenv.APIServerOptions{
		Scheme:       scheme(),
		UpstreamCRDs: []string{"kube-ovn-v1.15.24"},
		CRDPaths:     []string{"../../config/crd/bases"},
	})
	splitBrain(t, c, 60)
}
