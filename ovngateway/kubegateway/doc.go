// Package kubegateway is the Kubernetes side of package ovngateway, kept
// apart so that ovngateway itself imports only libovsdb and the standard
// library.
//
//   - Candidates picks a provider network's chassis set from Nodes: the
//     Kube-OVN ready label (ReadyLabel) set to "true", a chassis annotation
//     (ChassisAnnotation) and no deletion timestamp. NodeChanged says whether
//     a Node update can change that set.
//   - Condition maps a pass's ovngateway.Outcome and error to the
//     GatewayReady metav1.Condition, and Grace tracks how long a network's
//     passes have failed, against a k8s.io/utils clock.
//
// All of it is pure or in memory: it reads objects it is handed and never
// talks to the API server.
package kubegateway
