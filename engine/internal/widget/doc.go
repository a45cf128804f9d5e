// Package widget is a small custom resource, Widget (test.pxsubstrate.io/v1),
// used to exercise the engine against the fake client and a real API server.
// Its CRD is engine/testdata/crds/widgets.yaml; its deep copies are written
// by hand. It has no behaviour of its own and never talks to an API server.
package widget
