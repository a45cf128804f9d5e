package widget

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of Widget.
var GroupVersion = schema.GroupVersion{Group: "test.pxsubstrate.io", Version: "v1"}

// Widget is a namespaced object whose status mirrors its spec.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Spec   `json:"spec,omitempty"`
	Status Status `json:"status,omitempty"`
}

// Spec is the desired state of a Widget.
type Spec struct {
	Value string `json:"value,omitempty"`
}

// Status is the observed state of a Widget.
type Status struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Mirror             string             `json:"mirror,omitempty"`
	ReconciledBy       string             `json:"reconciledBy,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// List is a list of Widgets.
type List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// AddToScheme registers Widget and its list in s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypeWithName(GroupVersion.WithKind("Widget"), &Widget{})
	s.AddKnownTypeWithName(GroupVersion.WithKind("WidgetList"), &List{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// New returns a Widget named namespace/name with spec.value set to value.
func New(namespace, name, value string) *Widget {
	return &Widget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       Spec{Value: value},
	}
}

// DeepCopyInto copies w into out.
func (w *Widget) DeepCopyInto(out *Widget) {
	*out = *w
	out.TypeMeta = w.TypeMeta
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = w.Spec
	w.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of w.
func (w *Widget) DeepCopy() *Widget {
	if w == nil {
		return nil
	}
	out := new(Widget)
	w.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (w *Widget) DeepCopyObject() runtime.Object {
	if c := w.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies s into out.
func (s *Status) DeepCopyInto(out *Status) {
	*out = *s
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies l into out.
func (l *List) DeepCopyInto(out *List) {
	*out = *l
	out.TypeMeta = l.TypeMeta
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Widget, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopyObject implements runtime.Object.
func (l *List) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := new(List)
	l.DeepCopyInto(out)
	return out
}
