package talostemplate

import (
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/strictyaml"
)

// ChartTalos is the talos: block of a kubernetes-nodes chart values file:
// the Talos release, schematic and factory a pool's workers run, which the
// template must be built from.
type ChartTalos struct {
	Version         string `json:"version"`
	SchematicID     string `json:"schematicID"`
	ImageFactoryURL string `json:"imageFactoryURL"`
}

// ReadChartValues reads the talos: block of a chart values file. Other keys
// are ignored, but a key it reads spelt in another case (Talos:,
// schematicId:) or a key given twice is refused by its path; a file without
// the block is an error.
func ReadChartValues(data []byte) (ChartTalos, error) {
	var doc struct {
		Talos *ChartTalos `json:"talos"`
	}
	if err := strictyaml.UnmarshalOpen(data, &doc); err != nil {
		return ChartTalos{}, fmt.Errorf("cannot read the chart values: %w", err)
	}
	if doc.Talos == nil {
		return ChartTalos{}, errors.New("cannot read the chart values: there is no talos: block with version, schematicID and imageFactoryURL")
	}
	return *doc.Talos, nil
}

// Apply fills the Talos fields of in that are still empty from the values,
// so explicit inputs override the chart.
func (c ChartTalos) Apply(in Inputs) Inputs {
	in.TalosVersion = or(in.TalosVersion, c.Version)
	in.SchematicID = or(in.SchematicID, c.SchematicID)
	in.FactoryURL = or(in.FactoryURL, c.ImageFactoryURL)
	return in
}
