// Package capitest holds no code: its tests create every golden render
// scenario of capmoxrender (both capmox generations) on a real
// kube-apiserver with the real managers of Cluster API core and of the
// Talos bootstrap provider (CABPT) running (internal/testenv/capi), so that
// Cluster API's and CABPT's own webhooks admit what we render (CABPT's
// TalosConfig webhook judges each TalosConfig Cluster API clones from our
// TalosConfigTemplate) and Cluster API's own controllers make the
// MachineSets and Machines of each pool from our templates.
//
// capmox's CRDs are those of the capmox v0.9.0 module for v0.8+ and the
// copy of v0.7.7 in third_party/crds for v0.7, with the contract labels
// capmox's kustomization adds. TestOwnersAdmit then runs, one generation
// after the other (capmox holds its webhook port), an API server with
// every owner of what we render: Cluster API, the IPAM provider, CABPT
// and capmox itself (v0.9.0 for the v0.8+ render, v0.7.2 for v0.7), so
// that capmox's ProxmoxCluster, ProxmoxMachineTemplate and ProxmoxMachine
// webhooks (with their defaults) and the IPAM provider's pool webhook
// judge every scenario, the Machines Cluster API makes of each pool, and
// inputs drawn at random near the owners' edges. Kamaji (KamajiControlPlane)
// and Flux (HelmRelease) are not served by the Go module proxy: their
// kinds get stand-in CRDs that accept anything and judge nothing
// (capi.StandInCRD). Machines stop where Cluster API waits for the
// bootstrap and infrastructure providers, which the tests assert.
package capitest
