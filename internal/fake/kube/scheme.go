package kube

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme returns a new scheme holding the core Kubernetes types (v1) and
// coordination.k8s.io/v1 (Lease). Callers add their own types to it; every
// call returns a fresh scheme. It is deliberately small: the fake client
// builds a REST mapper over every type of its scheme.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(coordinationv1.AddToScheme(s))
	return s
}
