package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clienttesting "k8s.io/client-go/testing"
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
	// Typed keeps the objects of kinds the scheme has Go types for as typed
	// objects in memory and answers every call on them without the fake
	// client's JSON conversions and per-write REST mapping, with the fake's
	// semantics (see memStore); other kinds still go to the fake client.
	// For simulations of thousands of objects.
	Typed bool
}

// NewClient returns controller-runtime's fake client configured by o.
func NewClient(o ClientOptions) client.WithWatch {
	s := o.Scheme
	if s == nil {
		s = Scheme()
	}
	b := fake.NewClientBuilder().
		WithScheme(s).
		WithStatusSubresource(o.WithStatus...)
	var c client.WithWatch
	if o.Typed {
		b = b.WithObjectTracker(clienttesting.NewObjectTracker(s, serializer.NewCodecFactory(s).UniversalDecoder()))
		m, err := newMemStore(b.Build(), s, o.WithStatus)
		if err != nil {
			panic(err.Error())
		}
		for _, obj := range o.Objects {
			if err := m.seed(obj); err != nil {
				panic(fmt.Sprintf("cannot store %s: %v", client.ObjectKeyFromObject(obj), err))
			}
		}
		c = m
	} else {
		c = b.WithObjects(o.Objects...).Build()
	}
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
