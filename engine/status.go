package engine

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusAccess finds the status of objects of one type: the exported field
// named Status of a typed object, or .status of an unstructured one.
type statusAccess struct {
	index        []int
	unstructured bool
}

func newStatusAccess(obj client.Object) statusAccess {
	if _, ok := obj.(runtime.Unstructured); ok {
		return statusAccess{unstructured: true}
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return statusAccess{}
	}
	f, ok := t.FieldByName("Status")
	if !ok || !f.IsExported() {
		return statusAccess{}
	}
	return statusAccess{index: f.Index}
}

// enabled reports whether the type has a status to write.
func (a statusAccess) enabled() bool {
	return a.unstructured || a.index != nil
}

func (a statusAccess) get(obj client.Object) any {
	if a.unstructured {
		return obj.(runtime.Unstructured).UnstructuredContent()["status"]
	}
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return v.FieldByIndex(a.index).Interface()
}

// changed reports whether the status of after differs from before's.
func (a statusAccess) changed(before, after client.Object) bool {
	if !a.enabled() {
		return false
	}
	return !equality.Semantic.DeepEqual(a.get(before), a.get(after))
}
