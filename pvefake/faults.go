package pvefake

import (
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"time"
)

// Request is one request the server received.
type Request struct {
	Method string
	Path   string // as sent, including /api2/json
	// Status is the answer's HTTP status, 0 while unanswered.
	Status int
	// User is who the request authenticated as: the full token id
	// (user@realm!name) or the user of a ticket; "" when it did not
	// authenticate (or has not yet).
	User string
}

// Mutating reports whether the method changes state in PVE's API
// (POST, PUT, DELETE).
func (r Request) Mutating() bool {
	return r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodDelete
}

// Fault makes matching requests fail after authentication, before routing.
type Fault struct {
	// Method matches the HTTP method; empty matches every method.
	Method string
	// Path is a regular expression matched against the path relative to
	// /api2/json (for example `^/access/acl$`).
	Path string
	// Status and Message form the answer (Message is PVE's text; a 400
	// carries it under Param when set).
	Status  int
	Message string
	Param   string
	// Times is how many requests fail; 0 means every one until cleared.
	Times int
	// After is how many matching requests pass before the first fails
	// (the fifth VNet of a batch: After 4).
	After int
}

type faultRule struct {
	Fault
	re     *regexp.Regexp
	left   int
	passed int
}

type taskFailure struct {
	match, message string
}

// faults holds the hooks and counters; it has its own lock so that
// counting never waits for a handler.
type faults struct {
	mu       sync.Mutex
	requests []Request
	rules    []*faultRule
	taskFail []taskFailure
	authLog  []string
	latency  *time.Duration
	unserved []Request
}

func (f *faults) count(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, Request{Method: method, Path: path})
	return len(f.requests) - 1
}

// answered records the status of request i (an index count returned);
// requests cleared since are not touched.
func (f *faults) answered(i, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < len(f.requests) {
		f.requests[i].Status = status
	}
}

// authenticated records who request i (an index count returned)
// authenticated as; requests cleared since are not touched.
func (f *faults) authenticated(i int, user string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < len(f.requests) {
		f.requests[i].User = user
	}
}

// unservedRequest records a request no method of the server serves, by
// who it authenticated as ("" before authentication).
func (f *faults) unservedRequest(method, path, user string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unserved = append(f.unserved, Request{Method: method, Path: path, User: user})
}

func (f *faults) delay(def time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.latency != nil {
		return *f.latency
	}
	return def
}

func (f *faults) authFailed(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authLog = append(f.authLog, err.Error())
}

func (f *faults) injected(method, rel string) *apiError {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rules {
		if (r.Method != "" && r.Method != method) || !r.re.MatchString(rel) {
			continue
		}
		if r.passed < r.After {
			r.passed++
			continue
		}
		if r.Times > 0 {
			r.left--
			if r.left == 0 {
				f.rules = append(f.rules[:i:i], f.rules[i+1:]...)
			}
		}
		msg := r.Message + "\n"
		if r.Status == http.StatusBadRequest && r.Param != "" {
			return paramErr(r.Param, "%s", r.Message)
		}
		return &apiError{Status: r.Status, Msg: msg}
	}
	return nil
}

// takeTaskFailure consumes the failure armed for a task type (or
// "type:id"), if any.
func (f *faults) takeTaskFailure(typ, id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, tf := range f.taskFail {
		if tf.match == typ || tf.match == typ+":"+id {
			f.taskFail = append(f.taskFail[:i:i], f.taskFail[i+1:]...)
			return tf.message, true
		}
	}
	return "", false
}

// InjectError adds a fault. It fails on an invalid path pattern or a
// status that is not an error.
func (srv *Server) InjectError(f Fault) error {
	re, err := regexp.Compile(f.Path)
	if err != nil {
		return fmt.Errorf("cannot inject a fault: path pattern %q: %w", f.Path, err)
	}
	if f.Status < 400 || f.Status > 599 {
		return fmt.Errorf("cannot inject a fault: status %d is not an error status (use 400-599)", f.Status)
	}
	srv.faults.mu.Lock()
	defer srv.faults.mu.Unlock()
	srv.faults.rules = append(srv.faults.rules, &faultRule{Fault: f, re: re, left: f.Times})
	return nil
}

// ClearFaults removes every injected fault and armed task failure.
func (srv *Server) ClearFaults() {
	srv.faults.mu.Lock()
	defer srv.faults.mu.Unlock()
	srv.faults.rules, srv.faults.taskFail = nil, nil
}

// FailNextTask makes the next worker task whose type is match (for
// example "qmclone", "qmcreate", "download", "qmtemplate") or whose
// "type:id" is match fail with message as its exit status. The task's
// effect is not applied, as PVE rolls a failed worker back.
func (srv *Server) FailNextTask(match, message string) {
	srv.faults.mu.Lock()
	defer srv.faults.mu.Unlock()
	srv.faults.taskFail = append(srv.faults.taskFail, taskFailure{match: match, message: message})
}

// SetLatency changes the delay of every later request.
func (srv *Server) SetLatency(d time.Duration) {
	srv.faults.mu.Lock()
	defer srv.faults.mu.Unlock()
	srv.faults.latency = &d
}

// Requests returns the requests received so far, in order.
func (srv *Server) Requests() []Request {
	srv.faults.mu.Lock()
	defer srv.faults.mu.Unlock()
	return append([]Request(nil), srv.faults.requests...)
}

// Denied returns the requests answered 403 Forbidden, in order: what a
// token lacked a privilege for (Request.User names the token).
func (srv *Server) Denied() []Request {
	var out []Request
	for _, r := range srv.Requests() {
		if r.Status == http.StatusForbidden {
			out = append(out, r)
		}
	}
	return out
}

// MutatingRequests returns the POST, PUT and DELETE requests received.
func (srv *Server) MutatingRequests() []Request {
	var out []Request
	for _, r := range srv.Requests() {
		if r.Mutating() {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests forgets the requests counted so far, the unserved ones
// included.
func (srv *Server) ResetRequests() {
	srv.faults.mu.Lock()
	defer srv.faults.mu.Unlock()
	srv.faults.requests, srv.faults.unserved = nil, nil
}

// Unserved returns, in order, the requests the server has no method for:
// those it answered "501 Method '<METHOD> <path>' not implemented" after
// authentication, as pveproxy answers a path PVE's API does not have, or
// "501 no such uri" outside /api2/json. A test that drives a client
// through a whole workflow asserts it is empty, so a call the server does
// not serve fails by name instead of as a client's misreading of the 501.
func (srv *Server) Unserved() []Request {
	srv.faults.mu.Lock()
	defer srv.faults.mu.Unlock()
	return append([]Request(nil), srv.faults.unserved...)
}

// AuthFailures returns why authentications failed, in order, as PVE logs
// them on the server ("no such token 'x' for user 'u@pve'", "invalid token
// value!"). Secrets never appear in them.
func (srv *Server) AuthFailures() []string {
	srv.faults.mu.Lock()
	defer srv.faults.mu.Unlock()
	return append([]string(nil), srv.faults.authLog...)
}
