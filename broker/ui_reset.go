package broker

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/samsamq/samsa/protocol"
)

// uiResetRequest is POST /ui/api/group/reset's body. To is "earliest",
// "latest", "time" (TimestampMs: the first message stored at or after
// it) or "offset" (Offset, kept within each queue's offsets). DryRun
// answers what would change and changes nothing: the page shows it and
// asks to confirm before it sends the same request without DryRun.
type uiResetRequest struct {
	Group       string `json:"group"`
	Topic       string `json:"topic"`
	To          string `json:"to"`
	TimestampMs int64  `json:"timestampMs"`
	Offset      int64  `json:"offset"`
	DryRun      bool   `json:"dryRun"`
}

// uiReset is one queue's move.
type uiReset struct {
	Queue int32 `json:"queue"`
	From  int64 `json:"from"` // -1: no offset before
	To    int64 `json:"to"`
}

type uiResetAnswer struct {
	Group  string    `json:"group"`
	Topic  string    `json:"topic"`
	DryRun bool      `json:"dryRun"`
	Queues []uiReset `json:"queues"`
}

// uiMutationHeader must be on every mutating request: a cross-site form
// or image cannot set it, and a cross-site fetch that sets it needs a
// CORS preflight the admin listener never grants.
const uiMutationHeader = "X-Samsa-UI"

// resetHandler moves a group's committed offsets on this broker, as
// samsa group reset-offsets does for each master. It refuses: any method
// but POST; a request without the X-Samsa-UI header or a JSON body; with
// ACL on, a request without an admin account (the listener's basic auth
// checks it too); with ACL off, an admin listener that is not on
// loopback (nobody could be told apart); on a slave (offsets are the
// master's); a group with members online (their clients would write their
// own offsets back: RocketMQ pushes the reset to them, which Samsa's
// client does not obey).
func (u *uiServer) resetHandler(w http.ResponseWriter, r *http.Request) {
	b := u.b
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		uiError(w, http.StatusMethodNotAllowed, "resetting offsets needs POST")
		return
	}
	if r.Header.Get(uiMutationHeader) != "1" {
		uiError(w, http.StatusForbidden, "resetting offsets needs the "+uiMutationHeader+": 1 header (sent by the dashboard page)")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		uiError(w, http.StatusUnsupportedMediaType, "resetting offsets needs a JSON body (Content-Type: application/json)")
		return
	}
	if b.acl != nil {
		ak, sk, ok := r.BasicAuth()
		if !ok || !b.acl.adminCredentials(ak, sk) {
			uiError(w, http.StatusUnauthorized, "resetting offsets needs an admin account (HTTP basic auth)")
			return
		}
	} else if !loopbackListener(b.AdminAddr()) {
		uiError(w, http.StatusForbidden, "resetting offsets from the dashboard needs ACL on (an admin account) or the admin listener on loopback")
		return
	}
	var req uiResetRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		uiError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	v, err := u.reset(req)
	uiAnswer(w, v, err)
}

func (u *uiServer) reset(req uiResetRequest) (*uiResetAnswer, error) {
	b := u.b
	if req.Group == "" || req.Topic == "" {
		return nil, badRequest("group and topic are required")
	}
	if err := ValidateGroup(req.Group); err != nil {
		return nil, badRequest("group: %v", err)
	}
	if b.isSlave() {
		return nil, &uiErr{http.StatusConflict, "this broker is a slave: its offsets are its master's; reset them on the master " + b.MasterAddr()}
	}
	tc, ok := b.topics.get(req.Topic)
	if !ok {
		return nil, notFound("topic %q does not exist on this broker", req.Topic)
	}
	if ids := b.clients.consumerIDs(req.Group); len(ids) > 0 && !req.DryRun {
		return nil, &uiErr{http.StatusConflict, fmt.Sprintf(
			"group %s has %d member(s) online: stop its consumers, then reset (a running member would write its own offsets back)", req.Group, len(ids))}
	}
	target := func(q int32) (int64, error) {
		lo, hi := max(b.store.MinQueueOffset(req.Topic, q), 0), max(b.store.MaxQueueOffset(req.Topic, q), 0)
		switch req.To {
		case "earliest":
			return lo, nil
		case "latest":
			return hi, nil
		case "time":
			if req.TimestampMs <= 0 {
				return 0, badRequest("timestampMs: want a Unix time in milliseconds, got %d", req.TimestampMs)
			}
			return offsetByTime(b.store, req.Topic, q, req.TimestampMs, false), nil
		case "offset":
			if req.Offset < 0 {
				return 0, badRequest("offset: %d is negative", req.Offset)
			}
			return min(max(req.Offset, lo), hi), nil
		}
		return 0, badRequest("to: want earliest, latest, time or offset, got %q", req.To)
	}
	ans := &uiResetAnswer{Group: req.Group, Topic: req.Topic, DryRun: req.DryRun, Queues: []uiReset{}}
	for q := range int32(tc.ReadQueueNums) {
		to, err := target(q)
		if err != nil {
			return nil, err
		}
		from := int64(-1)
		if off, ok := b.offsets.query(req.Group, req.Topic, q); ok {
			from = off
		}
		ans.Queues = append(ans.Queues, uiReset{Queue: q, From: from, To: to})
	}
	if req.DryRun {
		return ans, nil
	}
	for _, m := range ans.Queues { // every queue checked before any moves
		if code, remark := b.checkOffsetCommit(req.Group, req.Topic, m.Queue, m.To); code != protocol.Success {
			return nil, badRequest("queue %d: %s", m.Queue, remark)
		}
	}
	for _, m := range ans.Queues {
		if err := b.offsets.commit(req.Group, req.Topic, m.Queue, m.To); err != nil {
			return nil, fmt.Errorf("queue %d: %w", m.Queue, err)
		}
	}
	b.log.Info("broker: offsets reset from the dashboard", "group", req.Group, "topic", req.Topic, "to", req.To)
	return ans, nil
}
