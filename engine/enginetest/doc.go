// Package enginetest holds test helpers for code built on engine: an
// in-memory event Recorder that keeps what it is given, and StepTest, a
// table test of a Step (given objects, the object reconciled; expected
// writes, events and result) on controller-runtime's fake client. It never
// talks to an API server.
package enginetest
