package dashboard

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
)

// ResetRequest is POST /ui/api/group/reset's body. To is "earliest",
// "latest", "time" (TimestampMs: the first message stored at or after
// it) or "offset" (Offset, kept within each queue's offsets). DryRun
// answers what would change and changes nothing: the page shows it and
// asks to confirm before it sends the same request without DryRun.
//
// The dashboard hands a Source only a request with Group and Topic set,
// a To of those four, a TimestampMs above 0 for "time" and an Offset of
// 0 or more for "offset".
type ResetRequest struct {
	Group       string `json:"group"`
	Topic       string `json:"topic"`
	To          string `json:"to"`
	TimestampMs int64  `json:"timestampMs"`
	Offset      int64  `json:"offset"`
	DryRun      bool   `json:"dryRun"`
}

// ResetMove is one queue's move.
type ResetMove struct {
	Queue int32 `json:"queue"`
	From  int64 `json:"from"` // -1: no offset before
	To    int64 `json:"to"`
}

// ResetAnswer is what a reset moved, or with DryRun would move.
type ResetAnswer struct {
	Group  string      `json:"group"`
	Topic  string      `json:"topic"`
	DryRun bool        `json:"dryRun"`
	Queues []ResetMove `json:"queues"`
}

// MutationHeader must be on every mutating request: a cross-site form
// or image cannot set it, and a cross-site fetch that sets it needs a
// CORS preflight the admin listener never grants.
const MutationHeader = "X-Samsa-UI"

// resetBodyMax bounds a reset request's body.
const resetBodyMax = 64 << 10

// reset moves a group's committed offsets on this broker, as samsa
// group reset-offsets does for each master. It refuses: any method but
// POST; a request without the X-Samsa-UI header or a JSON body; with ACL
// on, a request without an admin account (the listener's basic auth
// checks it too); with ACL off, an admin listener that is not on
// loopback (nobody could be told apart); a malformed request. The Source
// refuses the rest (a slave, a group with members online).
func (d *Dashboard) reset(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		answerError(w, http.StatusMethodNotAllowed, "resetting offsets needs POST")
		return
	}
	if r.Header.Get(MutationHeader) != "1" {
		answerError(w, http.StatusForbidden, "resetting offsets needs the "+MutationHeader+": 1 header (sent by the dashboard page)")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		answerError(w, http.StatusUnsupportedMediaType, "resetting offsets needs a JSON body (Content-Type: application/json)")
		return
	}
	if d.adminAccount != nil {
		ak, sk, ok := r.BasicAuth()
		if !ok || !d.adminAccount(ak, sk) {
			answerError(w, http.StatusUnauthorized, "resetting offsets needs an admin account (HTTP basic auth)")
			return
		}
	} else if !d.loopback {
		answerError(w, http.StatusForbidden, "resetting offsets from the dashboard needs ACL on (an admin account) or the admin listener on loopback")
		return
	}
	var req ResetRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, resetBodyMax))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		answerError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	if dec.More() {
		answerError(w, http.StatusBadRequest, "bad request body: more than one JSON value")
		return
	}
	if err := checkReset(req); err != nil {
		answer(w, nil, err)
		return
	}
	ans, err := d.src.ResetOffsets(req)
	if err != nil {
		answer(w, nil, err)
		return
	}
	ans.Queues = orEmpty(ans.Queues)
	answer(w, ans, nil)
}

// checkReset refuses a malformed request.
func checkReset(req ResetRequest) error {
	if req.Group == "" || req.Topic == "" {
		return Invalid("group and topic are required")
	}
	switch req.To {
	case "earliest", "latest":
	case "time":
		if req.TimestampMs <= 0 {
			return Invalid("timestampMs: want a Unix time in milliseconds, got %d", req.TimestampMs)
		}
	case "offset":
		if req.Offset < 0 {
			return Invalid("offset: %d is negative", req.Offset)
		}
	default:
		return Invalid("to: want earliest, latest, time or offset, got %q", req.To)
	}
	return nil
}
