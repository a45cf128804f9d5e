// Package ovngatewaytest starts OVN northbound databases for tests of code
// that embeds ovngateway: libovsdb's in-memory server holding the full OVN
// NB schema of OVN 23.03, or a real ovsdb-server from Debian's ovn-central.
// Both listen on a unix socket in a temporary directory and stop on cleanup.
//
// NB seeds the rows other OVN clients write (Kube-OVN's router ports, a
// foreign HA_Chassis_Group, legacy Gateway_Chassis rows), reads the result
// straight from the server, and can take the database away (Outage) and
// bring it back (Recover).
//
// It never skips a test: without ovsdb-server, NewOVSDBServer fails the test
// with a message naming hack/test.sh and `apt-get install ovn-central`.
package ovngatewaytest
