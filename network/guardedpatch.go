package network

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// finalizerOps test the finalizers obj has (none tests as null) and then
// add finalizer, which obj lacks.
func finalizerOps(obj client.Object, finalizer string) []jsonPatchOp {
	have := obj.GetFinalizers()
	if len(have) == 0 {
		return []jsonPatchOp{{Op: "test", Path: "/metadata/finalizers"}, {Op: "add", Path: "/metadata/finalizers", Value: []string{finalizer}}}
	}
	return []jsonPatchOp{{Op: "test", Path: "/metadata/finalizers", Value: have}, {Op: "add", Path: "/metadata/finalizers/-", Value: finalizer}}
}

// annotationRemovalOps test that annotation key still has the value obj
// shows, and then remove it; obj must carry the annotation.
func annotationRemovalOps(obj client.Object, key string) []jsonPatchOp {
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
	return []jsonPatchOp{{Op: "test", Path: path, Value: obj.GetAnnotations()[key]}, {Op: "remove", Path: path}}
}

// guardedPatch applies ops to obj, a JSON patch whose tests cover every
// field it changes. A change elsewhere in the object since obj was read
// does not refuse it, as a merge patch with an optimistic lock would; a
// change of a tested field does, with a Conflict, so nothing another
// writer put there is lost. obj becomes the object the server stored.
func guardedPatch(ctx context.Context, c client.Writer, obj client.Object, ops []jsonPatchOp) error {
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data))
	if testFailed(err) {
		return apierrors.NewConflict(schema.GroupResource{}, obj.GetName(),
			errors.New("a field the patch changes changed since the object was read; it is read again"))
	}
	return err
}

// addFinalizer adds finalizer to obj, which lacks it, with a guardedPatch
// that tests the finalizers alone: a newer status does not refuse it, a
// change of the finalizers does.
func addFinalizer(ctx context.Context, c client.Writer, obj client.Object, finalizer string) error {
	return guardedPatch(ctx, c, obj, finalizerOps(obj, finalizer))
}

// testFailed reports whether err is the API server's answer to a
// guardedPatch that does not apply: 422 Invalid with no causes (the server
// keeps the patch library's message to itself), unlike a validation
// failure, which lists its fields. The other operations apply to whatever
// passes the tests, so a test failed: a guarded field changed.
func testFailed(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	s := st.Status()
	return s.Code == http.StatusUnprocessableEntity && s.Reason == metav1.StatusReasonInvalid && (s.Details == nil || len(s.Details.Causes) == 0)
}
