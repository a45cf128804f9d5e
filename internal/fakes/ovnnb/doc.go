// Package ovnnb starts OVN northbound databases for tests: libovsdb's
// in-memory server holding the full NB schema under test, and a real
// ovsdb-server process from Debian's ovn-central. Both listen on a unix
// socket inside a per-test temporary directory and are stopped on cleanup.
//
// The in-memory server sits behind a switch that can cut every connection and
// refuse new ones (Down/Up), and can report itself as a clustered follower or
// leader through its _Server database. The real server can be killed with
// SIGKILL and started again on the same database file (Kill/Restart), and can
// listen on SSL for TLS tests.
//
// The package never skips a test: when ovsdb-server is missing it fails the
// test with a message naming hack/test.sh and `apt-get install ovn-central`.
// It never talks to a database it did not start.
package ovnnb
