package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func review(t testing.TB, in input) *admissionv1.AdmissionReview {
	t.Helper()
	r := in.request(t)
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID("uid-1"), Kind: r.Kind, Namespace: r.Namespace,
			Operation: admissionv1.Operation(r.Operation),
			Object:    runtime.RawExtension{Raw: r.Object}, OldObject: runtime.RawExtension{Raw: r.OldObject},
		},
	}
}

func post(t *testing.T, h http.Handler, method, contentType string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, "/validate", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestHandlerAnswersEveryPairCase runs every table case through the HTTP
// handler and checks the AdmissionReview response agrees with Review.
func TestHandlerAnswersEveryPairCase(t *testing.T) {
	v := mustValidator(t, testConfig())
	for name, tc := range allPairCases() {
		t.Run(name, func(t *testing.T) {
			for _, in := range []input{tc.refused, tc.admitted} {
				ns := Namespaces{}
				if in.ns != nil {
					ns[in.namespace()] = in.ns
				}
				rec := post(t, NewHandler(v, ns), http.MethodPost, "application/json; charset=utf-8", js(t, review(t, in)))
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				var out admissionv1.AdmissionReview
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
					t.Fatal(err)
				}
				d, _ := v.Review(in.request(t), in.ns)
				want := &admissionv1.AdmissionResponse{UID: "uid-1", Allowed: d.Allowed}
				if !d.Allowed {
					want.Result = &metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid, Message: d.Message}
					want.AuditAnnotations = map[string]string{"policy": d.Policy}
				}
				if diff := cmp.Diff(want, out.Response); diff != "" {
					t.Errorf("response (-want +got):\n%s", diff)
				}
				if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" {
					t.Errorf("the answer must be an admission.k8s.io/v1 AdmissionReview, got %s %s", out.APIVersion, out.Kind)
				}
			}
		})
	}
}

func TestHandlerRefusesBadRequests(t *testing.T) {
	v := mustValidator(t, testConfig())
	h := NewHandler(v, Namespaces{})
	good := js(t, review(t, input{kind: gvkPod, obj: pod(nil)}))
	cases := map[string]struct {
		reason      string
		method      string
		contentType string
		body        []byte
		code        int
	}{
		"Get":        {reason: "reviews are POSTed", method: http.MethodGet, contentType: "application/json", body: good, code: http.StatusMethodNotAllowed},
		"YAML":       {reason: "only JSON", method: http.MethodPost, contentType: "application/yaml", body: good, code: http.StatusUnsupportedMediaType},
		"NotJSON":    {reason: "a body that is not JSON", method: http.MethodPost, contentType: "application/json", body: []byte("{"), code: http.StatusBadRequest},
		"NoRequest":  {reason: "a review without a request", method: http.MethodPost, contentType: "application/json", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), code: http.StatusBadRequest},
		"V1beta1":    {reason: "only admission/v1", method: http.MethodPost, contentType: "application/json", body: bytes.Replace(good, []byte("admission.k8s.io/v1"), []byte("admission.k8s.io/v1beta1"), 1), code: http.StatusBadRequest},
		"Control":    {reason: "a well-formed review", method: http.MethodPost, contentType: "application/json", body: good, code: http.StatusOK},
		"TooLarge":   {reason: "a body over the limit", method: http.MethodPost, contentType: "application/json", body: append(good, bytes.Repeat([]byte(" "), maxReviewBytes)...), code: http.StatusRequestEntityTooLarge},
		"WrongCType": {reason: "a bad media type", method: http.MethodPost, contentType: ";;", body: good, code: http.StatusUnsupportedMediaType},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if rec := post(t, h, tc.method, tc.contentType, tc.body); rec.Code != tc.code {
				t.Errorf("%s: status %d, want %d (%s)", tc.reason, rec.Code, tc.code, rec.Body)
			}
		})
	}
}

// TestAnswerFailsClosed: a namespace that cannot be read refuses the
// request with 500; a malformed object with 400.
func TestAnswerFailsClosed(t *testing.T) {
	v := mustValidator(t, testConfig())
	broken := NamespaceFunc(func(context.Context, string) (*Namespace, error) { return nil, errors.New("etcd is down") })
	out, err := v.Answer(context.Background(), review(t, input{kind: gvkPod, obj: pod(nil)}), broken)
	if err != nil {
		t.Fatal(err)
	}
	if out.Response.Allowed || out.Response.Result.Code != 500 || !strings.Contains(out.Response.Result.Message, "cannot read namespace tenant-a: etcd is down") {
		t.Errorf("want a 500 refusal naming the namespace, got %+v", out.Response)
	}
	// An exempt namespace is not read at all.
	out, err = v.Answer(context.Background(), review(t, input{kind: gvkPod, obj: in("kube-system", pod(nil))}), broken)
	if err != nil || !out.Response.Allowed {
		t.Errorf("an exempt namespace needs no lookup: %+v %v", out.Response, err)
	}
	bad := review(t, input{kind: gvkPod, obj: pod(nil)})
	bad.Request.Object.Raw = []byte(`{"metadata":{"annotations":{"a":1}}}`)
	out, err = v.Answer(context.Background(), bad, Namespaces{})
	if err != nil || out.Response.Allowed || out.Response.Result.Code != 400 {
		t.Errorf("a malformed object is refused with 400: %+v %v", out.Response, err)
	}
}
