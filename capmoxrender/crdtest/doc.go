// Package crdtest holds no code: its tests create every golden object of
// capmoxrender with a server-side dry run on real kube-apiservers that hold
// the upstream CRDs (capmox v0.7.7 with Cluster API v1.10.4, capmox v0.9.0
// with Cluster API v1.14.2, and the in-cluster IPAM provider). They live in
// their own package so that starting the API servers does not slow the
// renderer's unit tests.
package crdtest
