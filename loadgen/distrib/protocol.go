package distrib

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/samsamq/samsa/loadgen"
)

// The worker's endpoints (doc.go has the course of a run).
const (
	pathClock   = "/v1/clock"   // GET: the worker's clock
	pathPrepare = "/v1/prepare" // POST prepareRequest: make the share's driver, producers and consumers
	pathStart   = "/v1/start"   // POST startRequest: the start time (the barrier)
	pathStatus  = "/v1/status"  // GET ?run=: phase and counts (the heartbeat)
	pathDrained = "/v1/drained" // POST drainedRequest: every share's deliveries are in (or the drain ran out)
	pathResult  = "/v1/result"  // GET ?run=: the share's loadgen.Result
	pathStop    = "/v1/stop"    // POST runRequest: stop the run
)

// Bounds on what a request may make a worker hold, and on what the
// coordinator reads.
const (
	// maxRequestBody bounds a request's body: a prepare's workload and
	// driver spec are small; its payload is at most maxPayload (base64).
	maxRequestBody = 8 << 20
	// maxPayload bounds the payload file bytes a prepare carries.
	maxPayload = 4 << 20
	// maxSmallResponse bounds every answer but a result.
	maxSmallResponse = 1 << 20
	// DefaultMaxResultBytes bounds a share's result (its delivery sets
	// are compressed bitsets: a few bytes per run of consecutive messages).
	DefaultMaxResultBytes = 256 << 20
	// maxWorkers bounds the shares a workload is split into.
	maxWorkers = 1024
	// maxRunID bounds a run's id.
	maxRunID = 64
	// MinTokenBytes is the shortest token a worker or coordinator takes.
	MinTokenBytes = 16
)

// Bounds on a workload a worker takes, so a request's few bytes cannot
// make it allocate without limit before any message is sent (the
// producers' and consumers' numbers, delivery sets, payloads, keys).
const (
	maxConsumerSlots  = 1 << 20 // topics × groups × consumers
	maxGroupProducers = 1 << 22 // topics × groups × producers: delivery sets
	maxMessageSize    = 64 << 20
	maxPayloadPool    = 1 << 30 // random payloads × message size
	maxKeys           = 1 << 24 // keys × producers
)

// DriverSpec names the driver a worker makes for a run and where its
// cluster is; the worker's DriverFactory reads it. A worker adds its own
// client credentials (TLS, ACL): they never travel.
type DriverSpec struct {
	// Driver is the driver's name (samsa, rocketmq, nats, ...).
	Driver string `json:"driver"`
	// NameServers are a Samsa or RocketMQ cluster's name servers,
	// ;-separated; Broker a broker address for topic creation.
	NameServers string `json:"namesrv,omitempty"`
	Broker      string `json:"broker,omitempty"`
	// NATSURL is a NATS server's URL.
	NATSURL string `json:"nats_url,omitempty"`
	// Flush is the cell's flush ("sync", "async"): for a driver that
	// makes its topics durable one way or the other.
	Flush string `json:"flush,omitempty"`
}

// prepareRequest gives a worker its share of a run.
type prepareRequest struct {
	// Run is the coordinator's id for the run: every later request names it.
	Run string `json:"run"`
	// Worker is this worker's index among Workers: its share is
	// loadgen.Split's Worker-th.
	Worker   int              `json:"worker"`
	Workers  int              `json:"workers"`
	Workload loadgen.Workload `json:"workload"`
	Driver   DriverSpec       `json:"driver"`
	Tag      uint16           `json:"tag"`
	// ClockOffsetNs is the worker's clock minus the coordinator's, as the
	// coordinator measured it.
	ClockOffsetNs int64 `json:"clock_offset_ns"`
	// CreateTopics: this worker makes the topics (the first one does,
	// before the others prepare).
	CreateTopics bool `json:"create_topics,omitempty"`
	// Payload is the payload file's bytes, read by the coordinator.
	Payload []byte `json:"payload,omitempty"`
}

type startRequest struct {
	Run string `json:"run"`
	// StartNs is the start time, Unix ns on the coordinator's clock.
	StartNs int64 `json:"start_ns"`
}

type drainedRequest struct {
	Run string `json:"run"`
	// CaughtUp: every group had every acknowledged message.
	CaughtUp bool `json:"caught_up"`
}

type runRequest struct {
	Run string `json:"run"`
}

func (r *startRequest) runID() string   { return r.Run }
func (r *drainedRequest) runID() string { return r.Run }
func (r *runRequest) runID() string     { return r.Run }

type clockResponse struct {
	NowNs int64 `json:"now_ns"`
}

// The phases of a worker's run, as its status names them.
const (
	phasePreparing = "preparing" // making the driver, topics, consumers, producers
	phaseReady     = "ready"     // waiting for the start time
	phaseRunning   = "running"   // warm-up, window, the producers' grace
	phaseDraining  = "draining"  // producers done: waiting for the coordinator's drained
	phaseDone      = "done"      // the result is ready
	phaseFailed    = "failed"    // Error says why
)

type statusResponse struct {
	Run    string         `json:"run"`
	Phase  string         `json:"phase"`
	Error  string         `json:"error,omitempty"`
	Host   string         `json:"host,omitempty"`
	Counts loadgen.Counts `json:"counts"`
}

// errorResponse is every refusal's body.
type errorResponse struct {
	Error string `json:"error"`
}

// tokenOK reports, in constant time, whether r carries the token whose
// SHA-256 is want (hashing first: the comparison's time says nothing of
// the token's length either).
func tokenOK(r *http.Request, want [sha256.Size]byte) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	h := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(h[:], want[:]) == 1
}

// CheckToken refuses a token too short to be a secret.
func CheckToken(token string) error {
	if len(token) < MinTokenBytes {
		return fmt.Errorf("the loadgen token must be at least %d bytes (e.g. head -c 32 /dev/urandom | base64), got %d", MinTokenBytes, len(token))
	}
	if strings.ContainsAny(token, "\r\n") {
		return errors.New("the loadgen token must be one line")
	}
	return nil
}

// checkRunID refuses an id that is empty, long or not [0-9A-Za-z-].
func checkRunID(id string) error {
	if id == "" || len(id) > maxRunID || strings.IndexFunc(id, func(c rune) bool {
		return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-')
	}) >= 0 {
		return fmt.Errorf("bad run id %q", id)
	}
	return nil
}

// checkWorkload refuses, before anything is allocated for it, a workload
// a worker will not run: invalid, naming a file, or beyond the bounds.
func checkWorkload(w *loadgen.Workload, payload []byte) error {
	if w.PayloadFile != "" {
		return errors.New("a worker reads no files: the coordinator sends the payload file's bytes")
	}
	if len(payload) > maxPayload {
		return fmt.Errorf("payload of %d bytes: at most %d", len(payload), maxPayload)
	}
	w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		return err
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	slots := int64(w.Topics) * int64(w.ConsumerGroups) * int64(w.Consumers)
	if slots > maxConsumerSlots {
		bad("topics × groups × consumers is %d: a worker takes at most %d", slots, maxConsumerSlots)
	}
	if gp := int64(w.Topics) * int64(w.ConsumerGroups) * int64(w.Producers); gp > maxGroupProducers {
		bad("topics × groups × producers is %d: a worker takes at most %d", gp, maxGroupProducers)
	}
	if w.MessageSize > maxMessageSize {
		bad("message size %d: a worker takes at most %d", w.MessageSize, maxMessageSize)
	}
	if int64(w.RandomPayloads)*int64(w.MessageSize) > maxPayloadPool {
		bad("random payloads × message size is more than %d bytes", maxPayloadPool)
	}
	if int64(w.KeyCount)*int64(w.Topics*w.Producers) > maxKeys { // every producer makes its keys
		bad("keys × producers is %d: a worker takes at most %d", int64(w.KeyCount)*int64(w.Topics*w.Producers), maxKeys)
	}
	if w.BacklogBytes > 0 {
		bad("a backlog phase needs every worker's counts at once: not supported over workers")
	}
	return errors.Join(errs...)
}
