package crdtest_test

import (
	"testing"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
)

var generations = []capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08}

// capiV110 is the Cluster API release Cozystack ships with capmox v0.7.7.
const capiV110 = "sigs.k8s.io/cluster-api@v1.10.4"

func loadScenarios(t *testing.T) []scenario.Scenario { t.Helper(); return scenario.LoadT(t) }
