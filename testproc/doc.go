// Package testproc runs the child processes of tests, one way for all of
// them: a Process is started in the foreground with its output in a file,
// waited for until a probe says it serves, and stopped by its process id
// (SIGTERM, then SIGKILL); one that exits at start or does not come up in
// time is named in the error with the tail of its logs. OVSDB runs
// ovsdb-server on a database it creates from a schema (or on one made as a
// RAFT cluster member), its sockets, pid file and log in one folder, as
// OVN's and Open vSwitch's own scripts run it. FreePort and Find are what
// starting one needs: a free TCP port of 127.0.0.1, and a program found on
// PATH or in the sbin folders Debian installs daemons into.
//
// It imports only the standard library, so the public test kits
// (ovngateway/ovngatewaytest) build on it as the project's own test
// environments (internal/testenv) do.
package testproc
