package kubestore_test

import (
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/fakes/kube"
)

// TestSplitBrainAPIServer runs the split-brain scenario against a real
// kube-apiserver with the real Kube-OVN CRDs and this repository's CRDs.
func TestSplitBrainAPIServer(t *testing.T) {
	_, c := kube.StartAPIServer(t, kube.APIServerOptions{
		Scheme:       scheme(),
		UpstreamCRDs: []string{"kube-ovn-v1.15.24"},
		CRDPaths:     []string{"../../config/crd/bases"},
	})
	splitBrain(t, c, 60)
}
