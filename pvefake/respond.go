package pvefake

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// apiError is an answer other than 200, shaped like pve-http-server's: the
// first line of Msg becomes the reason phrase of the status line, and the
// JSON body carries {"data":null,"message":Msg} plus "errors" for parameter
// failures.
type apiError struct {
	Status int
	Msg    string
	Errors map[string]string
	// NoBody sends the status line only, as pveproxy does for 401 and for
	// a request it could not proxy (595).
	NoBody bool
	// Plain sends Msg itself as the body, without a Content-Type, as
	// pve-http-server's error() does for its own failures.
	Plain bool
	// Hangup closes the connection without an answer, as pveproxy leaves
	// a request whose handling died outside any answer.
	Hangup bool
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.Status, strings.TrimSpace(e.Msg)) }

// die is a plain Perl die inside an API handler: HTTP 500 with the message.
func die(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Msg: fmt.Sprintf(format, args...) + "\n"}
}

// wrapDie prefixes a handler error the way lock_user_config("msg") does:
// "msg: <error>". A parameter or permission exception is stringified with
// its code, exactly like Perl's "$errmsg: $err", and becomes a 500.
func wrapDie(prefix string, err *apiError) *apiError {
	if err == nil {
		return nil
	}
	return &apiError{Status: http.StatusInternalServerError, Msg: prefix + ": " + err.stringify()}
}

// inWorker is the error as a worker dies with it: a plain die as its text,
// which the task's exit status shows without a status code; an exception
// (403, 400) as it is.
func (e *apiError) inWorker() error {
	if e.Status == http.StatusInternalServerError && len(e.Errors) == 0 {
		return errors.New(strings.TrimSuffix(e.Msg, "\n"))
	}
	return e
}

// stringify renders the error like PVE::Exception::stringify.
func (e *apiError) stringify() string {
	msg := e.Msg
	if e.Status != http.StatusInternalServerError {
		msg = strconv.Itoa(e.Status) + " " + msg
	}
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	keys := make([]string, 0, len(e.Errors))
	for k := range e.Errors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		msg += k + ": " + e.Errors[k] + "\n"
	}
	return msg
}

// paramError is raise_param_exc: 400 "Parameter verification failed."
func paramError(errs map[string]string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Msg: "Parameter verification failed.\n", Errors: errs}
}

func paramErr(name, format string, args ...any) *apiError {
	return paramError(map[string]string{name: fmt.Sprintf(format, args...)})
}

// permError is raise_perm_exc: 403 "Permission check failed (<what>)".
func permError(what string) *apiError {
	msg := "Permission check failed"
	if what != "" {
		msg += " (" + what + ")"
	}
	return &apiError{Status: http.StatusForbidden, Msg: msg + "\n"}
}

func notImplemented(method, rel string) *apiError {
	return &apiError{Status: http.StatusNotImplemented, Msg: fmt.Sprintf("Method '%s %s' not implemented", method, rel)}
}

func unauthorized(msg string) *apiError {
	return &apiError{Status: http.StatusUnauthorized, Msg: msg + "\n", NoBody: true}
}

// writeData sends {"data": v} with 200, plus "total" when set.
func writeData(w http.ResponseWriter, v any, total *int) {
	body := map[string]any{"data": v}
	if total != nil {
		body["total"] = *total
	}
	b, err := json.Marshal(body)
	if err != nil {
		writeError(w, die("cannot encode the response: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// writeError sends an error with PVE's reason phrase. net/http cannot set
// a reason phrase, so the connection is hijacked and the response written
// by hand; pveproxy closes the connection after an error as well.
func writeError(w http.ResponseWriter, e *apiError) {
	reason := e.Msg
	if i := strings.IndexAny(reason, "\r\n"); i >= 0 {
		reason = reason[:i]
	}
	if reason == "" {
		reason = http.StatusText(e.Status)
	}
	var body []byte
	switch {
	case e.Plain:
		body = []byte(e.Msg)
	case !e.NoBody:
		env := map[string]any{"data": nil, "message": e.Msg}
		if len(e.Errors) > 0 {
			env["errors"] = e.Errors
		}
		body, _ = json.Marshal(env)
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		if !e.Plain {
			w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		}
		w.WriteHeader(e.Status)
		_, _ = w.Write(body)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	if e.Hangup {
		return
	}
	writeRaw(buf, e.Status, reason, body, !e.Plain)
}

func writeRaw(buf *bufio.ReadWriter, status int, reason string, body []byte, isJSON bool) {
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", status, reason)
	if len(body) > 0 && isJSON {
		_, _ = buf.WriteString("Content-Type: application/json;charset=UTF-8\r\n")
	}
	fmt.Fprintf(buf, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	_, _ = buf.Write(body)
	_ = buf.Flush()
}
