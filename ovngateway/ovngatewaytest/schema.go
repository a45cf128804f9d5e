package ovngatewaytest

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// schemaJSON is /usr/share/ovn/ovn-nb.ovsschema from Debian's ovn-central
// (OVN 23.03, NB schema 7.0.0).
//
//go:embed testdata/ovn-nb.ovsschema
var schemaJSON []byte

// SchemaJSON returns the full OVN NB schema under test, as ovsdb-tool reads it.
func SchemaJSON() []byte { return append([]byte(nil), schemaJSON...) }

// Schema returns the full OVN NB schema under test.
func Schema() (ovsdb.DatabaseSchema, error) {
	var s ovsdb.DatabaseSchema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		return ovsdb.DatabaseSchema{}, fmt.Errorf("cannot parse the embedded OVN NB schema: %w", err)
	}
	return s, nil
}

// ClientModel returns a client model with every table of the NB schema under
// test, for tests that seed or inspect rows a model-limited client cannot see.
func ClientModel() (model.ClientDBModel, error) {
	m, err := nbmodel.FullDatabaseModel()
	if err != nil {
		return model.ClientDBModel{}, fmt.Errorf("cannot build the full NB client model: %w", err)
	}
	return m, nil
}
