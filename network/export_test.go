package network

// AddFinalizer exposes addFinalizer to the tests that run it against the
// real API server and the in-memory store.
var AddFinalizer = addFinalizer
