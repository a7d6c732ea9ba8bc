package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// durationKeys are the Workload fields that are time.Durations.
var durationKeys = []string{"warmup", "duration", "batch_linger", "pull_interval", "report_interval", "drain", "setup_timeout", "backlog_timeout"}

// MarshalJSON writes durations as Go duration strings ("5s"), so result and
// experiment files read naturally.
func (w Workload) MarshalJSON() ([]byte, error) {
	type plain Workload
	b, err := json.Marshal(plain(w))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range durationKeys {
		raw, ok := m[k]
		if !ok {
			continue
		}
		var ns int64
		if err := json.Unmarshal(raw, &ns); err == nil {
			m[k], _ = json.Marshal(time.Duration(ns).String())
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON accepts durations as strings ("250ms") or nanoseconds, and
// rejects unknown fields so a typo in an experiment file is an error.
func (w *Workload) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, k := range durationKeys {
		raw, ok := m[k]
		if !ok || len(raw) == 0 || raw[0] != '"' {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("workload %s: %w", k, err)
		}
		m[k], _ = json.Marshal(int64(d))
	}
	nb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	type plain Workload
	dec := json.NewDecoder(bytes.NewReader(nb))
	dec.DisallowUnknownFields()
	var p plain = plain(*w)
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	*w = Workload(p)
	return nil
}
