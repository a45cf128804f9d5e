package network

// AddFinalizer exposes addFinalizer to the tests that run it against the
// real API server and the in-memory store.
var AddFinalizer = addFinalizer

// AdoptPatch exposes adoptPatch, the Vlan's adoption write, to the same
// tests.
var AdoptPatch = adoptPatch
