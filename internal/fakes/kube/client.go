package kube

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// ClientOptions configures NewClient. Every field is optional.
type ClientOptions struct {
	// Scheme knows every type the test stores; nil means Scheme().
	Scheme *runtime.Scheme
	// Objects are stored before the client is returned.
	Objects []client.Object
	// WithStatus lists the types that have a status subresource: Update and
	// Patch leave their status alone and Status().Update writes only status,
	// as on a real API server.
	WithStatus []client.Object
	// Faults, when set, may fail calls before or after they reach the store.
	Faults *Faults
	// Hooks run in front of Faults and see every call, including the ones
	// Faults then fails; use them to observe or count calls.
	Hooks interceptor.Funcs
}

// NewClient returns controller-runtime's fake client configured by o.
func NewClient(o ClientOptions) client.WithWatch {
	s := o.Scheme
	if s == nil {
		s = Scheme()
	}
	c := fake.NewClientBuilder().
		WithScheme(s).
		WithObjects(o.Objects...).
		WithStatusSubresource(o.WithStatus...).
		Build()
	if o.Faults != nil {
		c = interceptor.NewClient(c, o.Faults.Funcs())
	}
	return interceptor.NewClient(c, o.Hooks)
}

// Direct returns the client under every interceptor of c: it reads and
// writes the same store without faults or hooks. Tests use it to set up and
// inspect the world while faults are on.
func Direct(c client.WithWatch) client.WithWatch {
	for {
		u, ok := c.(interface{ Unwrap() client.WithWatch })
		if !ok {
			return c
		}
		c = u.Unwrap()
	}
}
