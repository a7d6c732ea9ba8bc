package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
)

// statusError is an error with the HTTP status it is answered with.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// NotFound is a Source's answer for something the broker does not have:
// 404 with the message.
func NotFound(format string, a ...any) error {
	return &statusError{http.StatusNotFound, fmt.Sprintf(format, a...)}
}

// Invalid is a Source's answer for a request it cannot carry out as
// asked (a queue the topic does not have): 400 with the message.
func Invalid(format string, a ...any) error {
	return &statusError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

// Conflict is a Source's answer for a change the broker's state forbids
// now (a reset on a slave, or with members online): 409 with the message.
func Conflict(format string, a ...any) error {
	return &statusError{http.StatusConflict, fmt.Sprintf(format, a...)}
}

// Unsupported is a Source's answer for a search the broker cannot make
// (its message index is off): 501 with the message.
func Unsupported(format string, a ...any) error {
	return &statusError{http.StatusNotImplemented, fmt.Sprintf(format, a...)}
}

// answer writes v as JSON, or err with its status (500 for an error
// without one).
func answer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status := http.StatusInternalServerError
		var se *statusError
		if errors.As(err, &se) {
			status = se.status
		}
		answerError(w, status, err.Error())
		return
	}
	body, err := json.Marshal(v)
	if err != nil {
		answerError(w, http.StatusInternalServerError, "encode answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body) // a failed write is the client gone
}

// answerError writes {"error": msg} with status.
func answerError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]string{"error": msg})
	_, _ = w.Write(body) // a failed write is the client gone
}

// queryInt reads an integer query parameter; def when absent.
func queryInt(r *http.Request, name string, def int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, Invalid("%s: %q is not an integer", name, s)
	}
	return n, nil
}

// loopbackListener says whether the admin listener accepts only local
// connections.
func loopbackListener(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() || host == "localhost"
}
