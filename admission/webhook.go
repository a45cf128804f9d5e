package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// NamespaceGetter returns the namespace a request lands in, or nil (and no
// error) when it does not exist.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*Namespace, error)
}

// NamespaceFunc adapts a function to NamespaceGetter.
type NamespaceFunc func(ctx context.Context, name string) (*Namespace, error)

// GetNamespace calls f.
func (f NamespaceFunc) GetNamespace(ctx context.Context, name string) (*Namespace, error) {
	return f(ctx, name)
}

// Namespaces is an in-memory NamespaceGetter keyed by name.
type Namespaces map[string]*Namespace

// GetNamespace returns the namespace, or nil when it is not in the map.
func (n Namespaces) GetNamespace(_ context.Context, name string) (*Namespace, error) {
	return n[name], nil
}

// FromCore converts a core/v1 Namespace; nil stays nil.
func FromCore(ns *corev1.Namespace) *Namespace {
	if ns == nil {
		return nil
	}
	return &Namespace{Name: ns.Name, Annotations: ns.Annotations}
}

// ErrReview marks an AdmissionReview that cannot be answered.
var ErrReview = errors.New("invalid AdmissionReview")

// maxReviewBytes bounds a request body: an object and its old version, each
// up to the API server's 3 MiB request limit, plus the envelope.
const maxReviewBytes = 7 << 20

// Answer decides the request of an admission.k8s.io/v1 AdmissionReview and
// returns the review with its response. A request the rules cannot read is
// refused with code 400, a namespace that cannot be read with 500: the
// webhook fails closed, like the policies' failurePolicy Fail.
func (v *Validator) Answer(ctx context.Context, review *admissionv1.AdmissionReview, namespaces NamespaceGetter) (*admissionv1.AdmissionReview, error) {
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("%w: got %s %s, want admission.k8s.io/v1 AdmissionReview", ErrReview, termsafe.Cut(review.APIVersion), termsafe.Cut(review.Kind))
	}
	if review.Request == nil {
		return nil, fmt.Errorf("%w: it has no request", ErrReview)
	}
	req := review.Request
	r := Request{Operation: string(req.Operation), Kind: req.Kind, Namespace: req.Namespace,
		Object: req.Object.Raw, OldObject: req.OldObject.Raw}
	resp := &admissionv1.AdmissionResponse{UID: req.UID}
	out := &admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	var ns *Namespace
	if v.readsNamespace(r) {
		got, err := namespaces.GetNamespace(ctx, r.Namespace)
		if err != nil {
			resp.Result = status(http.StatusInternalServerError, metav1.StatusReasonInternalError,
				fmt.Sprintf("cannot read namespace %s: %v", r.Namespace, err))
			return out, nil
		}
		ns = got
	}
	d, err := v.Review(r, ns)
	switch {
	case err != nil:
		resp.Result = status(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
	case d.Allowed:
		resp.Allowed = true
	default:
		resp.Result = status(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, d.Message)
		resp.AuditAnnotations = map[string]string{"policy": d.Policy}
	}
	return out, nil
}

func status(code int32, reason metav1.StatusReason, msg string) *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}
}

// DefaultReadTimeout bounds the reading of a review's body: the API
// server gives a webhook 10 seconds by default, and a client that sends
// its body slower than that only holds a connection.
const DefaultReadTimeout = 10 * time.Second

// Handler serves the admission webhook: it answers POSTed admission/v1
// AdmissionReviews. TLS is the server's business.
type Handler struct {
	Validator  *Validator
	Namespaces NamespaceGetter
	// ReadTimeout bounds the reading of the body from the request's
	// start; zero means DefaultReadTimeout.
	ReadTimeout time.Duration
}

// NewHandler returns a webhook handler for v that reads namespaces through ns.
func NewHandler(v *Validator, ns NamespaceGetter) *Handler {
	return &Handler{Validator: v, Namespaces: ns}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "admission reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "an AdmissionReview is sent as application/json", http.StatusUnsupportedMediaType)
		return
	}
	timeout := h.ReadTimeout
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	// A server that cannot set deadlines (a test recorder) reads without.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("the request body exceeds %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		http.Error(w, fmt.Sprintf("the request body was not read within %s", timeout), http.StatusRequestTimeout)
		return
	case err != nil:
		http.Error(w, fmt.Sprintf("cannot read the request body: %v", err), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, fmt.Sprintf("cannot decode the AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	out, err := h.Validator.Answer(r.Context(), &review, h.Namespaces)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// A failed write means the connection is gone; the API server then
	// applies the webhook's failure policy.
	_ = json.NewEncoder(w).Encode(out)
}
