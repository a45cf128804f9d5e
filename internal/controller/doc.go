// Package controller wires the proxmox-network-controller process: flags,
// a controller-runtime Manager for the informer cache and the metrics,
// probe and webhook servers, and a reconcile session that runs only on the
// replica holding the coordination.k8s.io Lease "proxmox-network-controller".
//
// # What runs where
//
// Every replica runs the informer cache, /metrics (--metrics-bind-address,
// default :8080), /healthz and /readyz (--health-probe-bind-address,
// default :8081; ready once the informers have synced and the webhook
// serves), and the admission webhook (--webhook-port, path /validate,
// certificates from --webhook-cert-dir), which judges with the same rules as
// the generated ValidatingAdmissionPolicies.
//
// The replica holding the Lease (engine.RunElected; --leader-elect=false
// runs at once) assembles its reconcilers (package reconcilers, which the
// simulator runs too: the network controller on a client whose writes also
// reach its cache, pool HA, the VPC address runner), feeds them from the
// informers (network.Watch), fills the cache from the API once (Load) and
// runs them. With
// --manage-gateway-chassis (the default) it also reads the TLS Secret named
// by --ovn-tls-secret through the API, by name, connects to the endpoints
// of --ovn-nb-address (the RAFT leader), runs the kubenetgateway Gateway and
// its garbage collector, and re-reconciles the networks of a provider
// network when one of its Nodes changes. The network controller's Events
// go to the API server through an events.k8s.io broadcaster, reporting as
// ReportingController, started with the session and shut down after its
// reconcilers. Losing the Lease stops the
// process with an error (Kubernetes restarts it); SIGTERM stops the
// reconcilers, releases the Lease and the servers, and exits 0.
//
// # What it never does
//
// It never lists, watches or logs a Secret; it reads the one it is told to
// by name. It never runs a reconcile on a replica that does not hold the
// Lease, and never releases the Lease while a reconcile runs.
package controller
