// Package ovngatewaytest starts OVN northbound databases for tests of
// ovngateway and of code that embeds it: libovsdb's in-memory server holding
// the full OVN NB schema of OVN 23.03 (StartInMemory), or a real
// ovsdb-server process from Debian's ovn-central (StartReal). Both listen on
// a unix socket inside a per-test temporary directory and are stopped on
// cleanup. The package imports only libovsdb and the standard library, so
// ovngateway's own tests use it too.
//
// The in-memory server sits behind a switch that can cut every connection and
// refuse new ones (Down/Up), and can report itself as a clustered follower or
// leader through its _Server database. The real server can be killed with
// SIGKILL and started again on the same database file (Kill/Restart), and can
// listen on SSL for TLS tests.
//
// Admin (and the functions of the same names that fail a test) seeds the rows
// other OVN clients write (Kube-OVN's router ports, a foreign
// HA_Chassis_Group, legacy Gateway_Chassis rows) through a client with the
// full model of package nbmodel, and reads the result straight from the
// server as a State comparable with cmp.Diff. NB puts both kinds of server
// behind one type that can take the database away (Outage) and bring it back
// (Recover).
//
// The package never skips a test: when ovsdb-server is missing it fails the
// test with a message naming hack/test.sh and `apt-get install ovn-central`.
// It never talks to a database it did not start.
package ovngatewaytest
