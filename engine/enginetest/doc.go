// Package enginetest holds test helpers for code built on engine: an
// in-memory event Recorder that keeps what it is given. It never talks to
// an API server.
package enginetest
