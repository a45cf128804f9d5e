// Package capitest holds no code: its tests create every golden render
// scenario of capmoxrender (both capmox generations) on a real
// kube-apiserver with the real Cluster API core manager running
// (internal/fakes/capi), so that Cluster API's own webhooks admit what we
// render and its own controllers make the MachineSets and Machines of each
// pool from our templates.
//
// capmox's CRDs come from third_party/crds with the contract labels capmox's
// kustomization adds. Kamaji (KamajiControlPlane), the Talos bootstrap
// provider (TalosConfigTemplate, TalosConfig) and Flux (HelmRelease) are not
// served by the Go module proxy: their kinds get stand-in CRDs that accept
// anything and judge nothing (capi.StandInCRD), so what those providers
// would refuse is not tested here, and Machines stop where Cluster API waits
// for the bootstrap and infrastructure providers, which the tests assert.
package capitest
