package loadgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/samsamq/samsa/internal/resultfile"
)

// Experiment is an end-to-end experiment file (experiments/*.json with
// "kind": "e2e"): a base workload, cells that each name a driver, the
// cluster settings and workload overrides, and an optional matrix whose
// cartesian product multiplies every cell.
type Experiment struct {
	resultfile.Spec // Kind "e2e"
	// Repeats per cell (median and spread are reported); default 3.
	Repeats int `json:"repeats"`
	// Base is the workload every cell starts from. OMBWorkload, in its
	// place, names an OpenMessaging Benchmark workload file whose
	// figures, with OMB's meaning (omb_workload.go), are the base.
	Base        Workload `json:"base"`
	OMBWorkload string   `json:"omb_workload,omitempty"`
	// Quick overrides the base for --quick runs (shorter durations).
	Quick json.RawMessage `json:"quick,omitempty"`
	// QuickRepeats, if set, replaces Repeats for --quick runs.
	QuickRepeats int        `json:"quick_repeats,omitempty"`
	Cells        []CellSpec `json:"cells"`
	// Matrix maps a workload field to the values it takes; every cell is
	// run once per combination.
	Matrix map[string][]json.RawMessage `json:"matrix,omitempty"`
	// QuickMatrix, if set, replaces Matrix for --quick runs (fewer
	// values); a comparison whose cells the quick form does not run is
	// left out of a quick result.
	QuickMatrix map[string][]json.RawMessage `json:"quick_matrix,omitempty"`
	// Compare lists ratios to report: cell label A over cell label B.
	Compare []Comparison `json:"compare,omitempty"`
	// Settle is an idle pause before each run ("5s"; default none). This
	// VM hands the page-cache memory a run's deleted files freed back to
	// its host within seconds, and writing into fresh pages then costs up
	// to 10x more: a run that starts right after another writes into
	// still-warm pages and gains over one that starts later.
	Settle string `json:"settle,omitempty"`
	// Alternate runs the cells in reverse order on every second repeat,
	// so that no cell always follows the same one.
	Alternate bool `json:"alternate,omitempty"`
}

// settle is Settle parsed (validate checked it).
func (e *Experiment) settle() time.Duration {
	d, _ := time.ParseDuration(e.Settle)
	return d
}

// CellSpec is one configuration to run.
type CellSpec struct {
	Label   string  `json:"label"`
	Driver  string  `json:"driver"` // samsa | rocketmq | nats | redis | rabbitmq | kafka
	Cluster Cluster `json:"cluster"`
	// Workload overrides fields of the base (and of the quick overrides).
	Workload json.RawMessage `json:"workload,omitempty"`
	// NoMatrix runs the cell once, not once per matrix combination.
	NoMatrix bool `json:"no_matrix,omitempty"`
	// FullOnly leaves the cell out of --quick runs (a peer's curve
	// beside Samsa's, too slow for make bench); its comparisons are left
	// out of a quick result with it.
	FullOnly bool `json:"full_only,omitempty"`
}

// Cluster is the server side of a cell.
type Cluster struct {
	// Flush is the Samsa broker's flush policy: "sync" (group commit) or
	// "async"; for NATS "sync" means sync_interval: always; for Redis
	// appendfsync always (async: everysec); for RabbitMQ quorum queues
	// (async: streams).
	Flush string `json:"flush"`
	// Backend is the Samsa store backend; default the broker's.
	Backend string `json:"backend,omitempty"`
	// MaxBatchBytes bounds a group commit (Samsa, sync flush).
	MaxBatchBytes int64 `json:"max_batch_bytes,omitempty"`
	// StreamPerQueue (NATS) makes each queue a JetStream stream of its
	// own instead of a subject of the topic's stream.
	StreamPerQueue bool `json:"stream_per_queue,omitempty"`

	// Replication (Samsa; replication.go checks these): "none" (default,
	// no slave), "async" (ASYNC_MASTER) or "sync" (SYNC_MASTER: a send is
	// answered once a slave holds it).
	Replication string `json:"replication,omitempty"`
	// Slaves beside the master; default 1 when replicated.
	Slaves int `json:"slaves,omitempty"`
	// SlaveAckFlushed makes the slaves acknowledge what they have
	// fsynced, not what they have appended (haSlaveAckFlushed): with
	// "sync", a send is answered once a slave holds it durably, so a power
	// loss of every replica loses nothing acknowledged under async flush.
	SlaveAckFlushed bool `json:"slave_ack_flushed,omitempty"`
	// LinkDelayMs is the one-way delay added to the master→slave
	// replication link, in ms; 0 (default): slaves dial the master's HA
	// port directly on loopback.
	LinkDelayMs float64 `json:"link_delay_ms,omitempty"`
	// LinkMethod makes the delay: "auto" (default: netem where
	// linkdelay.Available says so, else the proxy; the result says which
	// ran and why), "netem" or "proxy".
	LinkMethod string `json:"link_method,omitempty"`

	// Kafka is a kafka cell's producer, consumer and topic settings
	// (kafka.go; EnsureKafka fills and checks them). Flush, Backend and
	// the replication fields are Samsa's and mean nothing to a Kafka
	// cluster, whose own configuration decides when it fsyncs.
	Kafka Kafka `json:"kafka,omitzero"`
}

// Comparison names a ratio to report: metric of Num over Den.
type Comparison struct {
	Name   string `json:"name"`
	Num    string `json:"num"`    // cell label
	Den    string `json:"den"`    // cell label
	Metric string `json:"metric"` // msgs_per_sec | e2e_p50 | e2e_p99 | send_p99 | send_p999 | pub_p99 | drain_msgs_per_sec
	// Kind is "ratio" (default): Num over Den against Target; or
	// "additive" (latency metrics): Num minus Den, which must stay at or
	// below PlusRTT × Num's measured link round trip + PlusMs.
	Kind string `json:"kind,omitempty"`
	// Target, if set, is what the ratio should reach (>= for throughput,
	// <= for latency metrics).
	Target float64 `json:"target,omitempty"`
	// PlusRTT and PlusMs are an additive comparison's allowance.
	PlusRTT float64 `json:"plus_rtt,omitempty"`
	PlusMs  float64 `json:"plus_ms,omitempty"`
	// NotComparable, if set, says why the ratio is printed but says
	// nothing about the two systems (a peer held back by this machine or
	// by its packaged version, not by its design): the comparison has no
	// target, and reports print the reason beside it.
	NotComparable string `json:"not_comparable,omitempty"`
}

// Cell is a CellSpec resolved against the base workload and the matrix.
type Cell struct {
	Label    string   `json:"label"`
	Driver   string   `json:"driver"`
	Cluster  Cluster  `json:"cluster"`
	Workload Workload `json:"workload"`
}

// LoadExperiment reads and checks an experiment file.
func LoadExperiment(path string) (*Experiment, error) {
	e, err := resultfile.ReadExperiment[Experiment](path, "e2e")
	if err != nil {
		return nil, err
	}
	if e.Repeats == 0 {
		e.Repeats = 3
	}
	if len(e.Cells) == 0 {
		return nil, fmt.Errorf("%s: no cells", path)
	}
	if e.OMBWorkload != "" {
		if !reflect.DeepEqual(e.Base, Workload{}) {
			return nil, fmt.Errorf("%s: base and omb_workload exclude each other (quick and the cells' workloads still apply)", path)
		}
		// As named from where the lab runs (the repository's top), or from
		// the experiment file's directory's parent when run elsewhere.
		wpath := e.OMBWorkload
		if _, err := os.Stat(wpath); err != nil && !filepath.IsAbs(wpath) {
			wpath = filepath.Join(filepath.Dir(path), "..", wpath)
		}
		ow, err := LoadOMBWorkload(wpath)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if e.Base, err = ow.Workload(OMBScale{}); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

// validate checks what Expand cannot: every comparison's kind and metric,
// and that its cells exist in the full form (a typo in a label is an
// error, not a "cell missing" in a result).
func (e *Experiment) validate() error {
	cells, err := e.Expand(false)
	if err != nil {
		return err
	}
	labels := map[string]bool{}
	for _, c := range cells {
		labels[c.Label] = true
	}
	var errs []error
	if e.Settle != "" {
		if d, err := time.ParseDuration(e.Settle); err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("settle %q: want a duration >= 0", e.Settle))
		}
	}
	for _, c := range e.Compare {
		_, higher, err := metric(Summary{}, c.Metric)
		if err != nil {
			errs = append(errs, fmt.Errorf("comparison %q: %w", c.Name, err))
		}
		switch c.Kind {
		case "", "ratio":
			if c.PlusRTT != 0 || c.PlusMs != 0 {
				errs = append(errs, fmt.Errorf("comparison %q: plus_rtt and plus_ms belong to kind additive", c.Name))
			}
		case "additive":
			if higher || c.Target != 0 || c.PlusRTT < 0 || c.PlusMs < 0 {
				errs = append(errs, fmt.Errorf("comparison %q: additive compares a latency with plus_rtt, plus_ms >= 0 and no target", c.Name))
			}
		default:
			errs = append(errs, fmt.Errorf("comparison %q: kind %q: want ratio or additive", c.Name, c.Kind))
		}
		if c.NotComparable != "" && (c.Target != 0 || c.Kind == "additive") {
			errs = append(errs, fmt.Errorf("comparison %q: not_comparable takes no target", c.Name))
		}
		for _, l := range []string{c.Num, c.Den} {
			if !labels[l] {
				errs = append(errs, fmt.Errorf("comparison %q: no cell %q", c.Name, l))
			}
		}
	}
	return errors.Join(errs...)
}

// repeats is how many times each cell runs.
func (e *Experiment) repeats(quick bool) int {
	if quick && e.QuickRepeats > 0 {
		return e.QuickRepeats
	}
	return e.Repeats
}

// Expand resolves every cell: base, then quick overrides (if quick), then
// the cell's overrides, then one matrix combination.
func (e *Experiment) Expand(quick bool) ([]Cell, error) {
	base := e.Base
	if quick && len(e.Quick) > 0 {
		if err := json.Unmarshal(e.Quick, &base); err != nil {
			return nil, fmt.Errorf("quick: %w", err)
		}
	}
	matrix := e.Matrix
	if quick && e.QuickMatrix != nil {
		matrix = e.QuickMatrix
	}
	combos := matrixCombos(matrix)
	var out []Cell
	var errs []error
	for _, cs := range e.Cells {
		if quick && cs.FullOnly {
			continue
		}
		cl := cs.Cluster
		if err := errors.Join(cl.EnsureReplication(cs.Driver), cl.EnsureKafka(cs.Driver)); err != nil {
			errs = append(errs, fmt.Errorf("cell %s: %w", cs.Label, err))
			continue
		}
		cellCombos := combos
		if cs.NoMatrix {
			cellCombos = []combo{{}}
		}
		for _, combo := range cellCombos {
			w := base
			if len(cs.Workload) > 0 {
				if err := json.Unmarshal(cs.Workload, &w); err != nil {
					errs = append(errs, fmt.Errorf("cell %s: %w", cs.Label, err))
					continue
				}
			}
			label := cs.Label
			if combo.patch != nil {
				if err := json.Unmarshal(combo.patch, &w); err != nil {
					errs = append(errs, fmt.Errorf("cell %s matrix %s: %w", cs.Label, combo.label, err))
					continue
				}
				label += "/" + combo.label
			}
			w.Name = e.Name + ":" + label
			w.EnsureDefaults()
			if err := w.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("cell %s: %w", label, err))
				continue
			}
			out = append(out, Cell{Label: label, Driver: cs.Driver, Cluster: cl, Workload: w})
		}
	}
	return out, errors.Join(errs...)
}

type combo struct {
	label string
	patch json.RawMessage
}

// matrixCombos is the cartesian product of the matrix, keys in sorted order
// so labels and order are stable.
func matrixCombos(m map[string][]json.RawMessage) []combo {
	if len(m) == 0 {
		return []combo{{}}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type kv struct {
		k string
		v json.RawMessage
	}
	acc := [][]kv{nil}
	for _, k := range keys {
		var next [][]kv
		for _, prefix := range acc {
			for _, v := range m[k] {
				next = append(next, append(append([]kv(nil), prefix...), kv{k, v}))
			}
		}
		acc = next
	}
	out := make([]combo, 0, len(acc))
	for _, c := range acc {
		var labels []string
		obj := map[string]json.RawMessage{}
		for _, p := range c {
			labels = append(labels, p.k+"="+strings.Trim(string(p.v), `"`))
			obj[p.k] = p.v
		}
		b, _ := json.Marshal(obj)
		out = append(out, combo{label: strings.Join(labels, ","), patch: b})
	}
	return out
}
