// Package kubeovn runs Kube-OVN's own control plane next to a test API
// server, the way package capi runs the Cluster API managers: the
// kube-ovn-controller and kube-ovn-webhook of the module pinned by
// kube.KubeOVNModule (v1.14.10), built once from the Go module proxy by
// hack/kubeovn-assets.sh, against a real OVN northbound and southbound
// database (ovsdb-server from Debian's ovn-central).
//
// What comes from the module itself: the CRDs (its chart's
// kube-ovn-crd.yaml, plain YAML), the ValidatingWebhookConfiguration
// (yamls/webhook.yaml, its service turned into a URL on 127.0.0.1 and
// cert-manager's CA injection into a throwaway CA of internal/testenv/pki),
// and the schemas the two databases are created with: the ones its
// libovsdb models were generated from (NB 7.3.0, SB 20.33.0, OVN 24.03),
// without the minLength the generator copies from each maxLength (OVN's
// schemas have none; with it the NB refused every ACL name under 63
// characters).
// Kube-OVN refuses Debian's OVN 23.03 databases (NB 7.0.0): its models
// have columns those schemas lack. The controller gets the arguments and
// environment of the module's chart with its default values (ovn-cluster,
// join 100.64.0.0/16, ovn-default 10.16.0.0/16, geneve, leader election in
// kube-system under a pod name of its own) and an administrator's
// kubeconfig.
//
// What the test plays, because it runs on nodes: KubeOVN.AddNode registers a
// node's Chassis in the southbound database as its ovn-controller does,
// creates the Node as the kubelet does, and annotates and labels it as
// kube-ovn-cni does (chassis, provider networks ready). ovn-northd does not
// run, except in TestKubeOVNPacketThroughItsTopology: there
// internal/testenv/ovnlab runs Debian's ovn-northd and its chassis on these
// databases, each chassis a node whose own ovn-controller registers it
// (Node.OwnChassis).
//
// Each process is stopped by its id; a process that does not start is
// named with its log tail. kube-ovn-webhook reads its certificate from a
// fixed folder (/tmp/k8s-webhook-server/serving-certs), so one webhook runs
// on the machine at a time, under a lock of that folder. kube-ovn-controller
// creates /var/log/kube-ovn before anything else, which the test machine's
// root may do.
package kubeovn
