package txn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// Script tests: each testdata/*.txt file is a scenario for one Service
// on a fresh store (MemFS, fake clock), read by
// github.com/cockroachdb/datadriven: cases of
//
//	# comments
//	command args...
//	----
//	expected output
//
// separated by blank lines. `go test ./broker/txn -run TestScripts
// -rewrite` writes the actual output in place; review it as a diff.
// Commands:
//
//	config [timeout=D] [max=N] [reserved=D]  reopen with these settings (default 10s, 3, none)
//	prepare NAME [topic=tx] [queue=0] [group=pg] [immunity=SECONDS] [txid=ID]
//	                                 a prepared send, stored as the broker does (ToHalf)
//	end NAME[,NAME...] commit|rollback [group=pg] [at=NAME] [fail=ops|all]
//	                                 END_TRANSACTION (End); at= names another half's
//	                                 commit-log offset; fail= makes the append fail
//	                                 (ops: the final messages stored, the op records not)
//	producer NAME [group=pg] [full] [offline]
//	                                 a producer connection online (full: its queue
//	                                 takes nothing), or gone
//	tick D                           move the clock
//	check                            one check round, as Run does every CheckInterval
//	commit-final NAME                store half NAME's final message alone: what a
//	                                 crash between a commit's two writes leaves
//	crash [progress=lost]            power loss, then a new Service on what the disk
//	                                 kept; progress=lost: the consumer offsets too
//	restart                          clean stop, then a new Service
//	show                             the Service's state (each half from the
//	                                 progress on), the saved progress and
//	                                 transactionChecks.json
//
// Every command that writes prints the records it added to the log, in
// the order they lie in it: half@N (RMQ_SYS_TRANS_HALF_TOPIC), op@N
// (RMQ_SYS_TRANS_OP_HALF_TOPIC), checkmax@N (TRANS_CHECK_MAX_TIME_TOPIC),
// topic/queue@N (a real queue); check prints each CHECK_TRANSACTION_STATE
// sent, before them.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &script{r: newRig(t, nil), halves: map[string]record.Record{}, seen: map[queueRef]int64{}}
		s.watch(queueRef{HalfTopic, 0})
		s.watch(queueRef{OpHalfTopic, 0})
		s.watch(queueRef{CheckMaxTimeTopic, 0})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Input != "" {
				d.Fatalf(t, "a command is one line, then ----")
			}
			return s.run(t, d)
		})
	})
}

type queueRef struct {
	topic string
	queue int32
}

type script struct {
	r      *rig
	halves map[string]record.Record // by name
	names  []string                 // in prepare order
	seen   map[queueRef]int64       // the records printed so far, per queue
	queues []queueRef               // watched, in print order
}

func (s *script) watch(q queueRef) {
	if _, ok := s.seen[q]; !ok {
		s.seen[q] = 0
		s.queues = append(s.queues, q)
	}
}

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	r := s.r
	var out strings.Builder
	switch d.Cmd {
	case "config":
		timeout, maxChecks, reserved := "10s", 3, "0s"
		d.MaybeScanArgs(t, "timeout", &timeout)
		d.MaybeScanArgs(t, "max", &maxChecks)
		d.MaybeScanArgs(t, "reserved", &reserved)
		to, res := duration(t, d, timeout), duration(t, d, reserved)
		r.mut = func(c *Config) { c.Timeout, c.CheckMax, c.FileReserved = to, maxChecks, res }
		r.restart()
		return "ok"
	case "prepare":
		name := d.CmdArgs[0].Key
		topic, queue, group, immunity, txid := "tx", 0, "pg", "", ""
		d.MaybeScanArgs(t, "topic", &topic)
		d.MaybeScanArgs(t, "queue", &queue)
		d.MaybeScanArgs(t, "group", &group)
		d.MaybeScanArgs(t, "immunity", &immunity)
		d.MaybeScanArgs(t, "txid", &txid)
		props := map[string]string{PropTranPrepared: "true", PropProducerGroup: group, propUniqKey: "u-" + name}
		if immunity != "" {
			props[propCheckImmunity] = immunity
		}
		if txid != "" {
			props[propTransactionID] = txid
		}
		s.watch(queueRef{topic, int32(queue)})
		h := r.prepare(topic, int32(queue), name, props)
		s.halves[name] = h
		s.names = append(s.names, name)
	case "end":
		var refs []Ref
		for _, n := range strings.Split(d.CmdArgs[0].Key, ",") {
			h := s.half(t, d, n)
			refs = append(refs, Ref{h.QueueOffset, h.PhysOffset})
		}
		v := Commit
		switch d.CmdArgs[1].Key {
		case "commit":
		case "rollback":
			v = Rollback
		default:
			d.Fatalf(t, "end: commit or rollback, not %q", d.CmdArgs[1].Key)
		}
		group, at, fail := "pg", "", ""
		d.MaybeScanArgs(t, "group", &group)
		d.MaybeScanArgs(t, "at", &at)
		d.MaybeScanArgs(t, "fail", &fail)
		if at != "" {
			refs[0].CommitLogOffset = s.half(t, d, at).PhysOffset
		}
		r.mu.Lock()
		r.mu.failOps, r.mu.failAll = fail == "ops", fail == "all"
		r.mu.Unlock()
		res, err := r.svc.End(group, v, refs)
		var refErr *RefError
		switch {
		case err == nil:
			fmt.Fprintf(&out, "ok: %d records\n", len(res))
		case errors.Is(err, ErrSettled):
			out.WriteString("settled already\n")
		case errors.As(err, &refErr):
			fmt.Fprintf(&out, "refused: %v\n", err)
		default:
			fmt.Fprintf(&out, "error: %v\n", err)
		}
	case "producer":
		name, group := d.CmdArgs[0].Key, "pg"
		d.MaybeScanArgs(t, "group", &group)
		r.setProducer(name, group, d.HasArg("full"), !d.HasArg("offline"))
		return "ok"
	case "tick":
		r.clock.Add(duration(t, d, d.CmdArgs[0].Key))
		return fmt.Sprintf("t=%s", r.clock.Now().Sub(newClock().Now()))
	case "check":
		r.svc.round(nil)
		for _, c := range r.takeSent() {
			out.WriteString(s.checkLine(t, c) + "\n")
		}
	case "commit-final":
		h := s.half(t, d, d.CmdArgs[0].Key)
		m, err := r.svc.finalMessage(&halfRef{k: h.QueueOffset, rec: h})
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		if _, err := r.st.Append(context.Background(), m); err != nil {
			d.Fatalf(t, "%v", err)
		}
	case "crash":
		if d.HasArg("progress") {
			r.progress = &memProgress{offs: map[string]int64{}}
		}
		r.crash()
		s.resync()
		return "ok"
	case "restart":
		r.restart()
		s.resync()
		return "ok"
	case "show":
		return s.show()
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	r.waitDispatched()
	out.WriteString(s.added())
	if out.Len() == 0 {
		return "nothing written"
	}
	return strings.TrimSuffix(out.String(), "\n")
}

func duration(t *testing.T, d *datadriven.TestData, v string) time.Duration {
	dur, err := time.ParseDuration(v)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return dur
}

func (s *script) half(t *testing.T, d *datadriven.TestData, name string) record.Record {
	h, ok := s.halves[name]
	if !ok {
		d.Fatalf(t, "no half %q", name)
	}
	return h
}

// nameAt names the half at commit-log offset phys.
func (s *script) nameAt(phys int64) string {
	for n, h := range s.halves {
		if h.PhysOffset == phys {
			return n
		}
	}
	return fmt.Sprintf("?%d", phys)
}

// nameOf names half k.
func (s *script) nameOf(k int64) string {
	for n, h := range s.halves {
		if h.QueueOffset == k {
			return n
		}
	}
	return "?"
}

// resync forgets what a crash took back.
func (s *script) resync() {
	s.r.waitDispatched()
	for q, off := range s.seen {
		s.seen[q] = min(off, s.r.st.MaxQueueOffset(q.topic, q.queue))
	}
}

// added prints the records added to the watched queues since the last
// call, in commit-log order.
func (s *script) added() string {
	type line struct {
		phys int64
		text string
	}
	var lines []line
	for _, q := range s.queues {
		for _, rec := range s.r.read(q.topic, q.queue, s.seen[q]) {
			lines = append(lines, line{rec.PhysOffset, "+ " + s.recordLine(q, rec) + "\n"})
			s.seen[q] = rec.QueueOffset + 1
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].phys < lines[j].phys })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
	}
	return b.String()
}

func (s *script) recordLine(q queueRef, rec record.Record) string {
	var b strings.Builder
	switch q.topic {
	case HalfTopic:
		fmt.Fprintf(&b, "half@%d", rec.QueueOffset)
	case OpHalfTopic:
		fmt.Fprintf(&b, "op@%d", rec.QueueOffset)
	case CheckMaxTimeTopic:
		fmt.Fprintf(&b, "checkmax@%d", rec.QueueOffset)
	default:
		fmt.Fprintf(&b, "%s/%d@%d", q.topic, q.queue, rec.QueueOffset)
	}
	if q.topic == OpHalfTopic {
		k, err := opHalfOffset(rec.Body)
		if err != nil {
			return b.String() + " " + err.Error()
		}
		fmt.Fprintf(&b, " settles half %d (%s)", k, s.nameOf(k))
	} else {
		fmt.Fprintf(&b, " %s", rec.Body)
	}
	switch record.TransactionType(rec.SysFlag) {
	case record.TransactionPrepared:
		b.WriteString(" prepared")
	case record.TransactionCommit:
		b.WriteString(" commit")
	case record.TransactionRollback:
		b.WriteString(" rollback")
	}
	if rec.PreparedTxOffset != 0 || record.TransactionType(rec.SysFlag) == record.TransactionCommit {
		fmt.Fprintf(&b, " of=%s", s.nameAt(rec.PreparedTxOffset))
	}
	if q.topic != OpHalfTopic && (rec.Flag != 7 || rec.ReconsumeTimes != 1) {
		fmt.Fprintf(&b, " flag=%d reconsume=%d", rec.Flag, rec.ReconsumeTimes)
	}
	b.WriteString(" " + propsLine(rec.UserProperties()))
	return b.String()
}

// propsLine prints properties sorted by name.
func propsLine(props []byte) string {
	m := record.ParseProperties(props)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return "[" + strings.Join(keys, " ") + "]"
}

// checkLine prints a CHECK_TRANSACTION_STATE: its header, and the half in
// its body as the producer sees it.
func (s *script) checkLine(t *testing.T, c sent) string {
	var h protocol.CheckTransactionStateRequestHeader
	if err := h.Decode(c.cmd.ExtFields); err != nil {
		t.Fatal(err)
	}
	if c.cmd.Code != protocol.CheckTransactionState || c.cmd.IsResponse() {
		t.Fatalf("check-back %v is not a CHECK_TRANSACTION_STATE request", c.cmd)
	}
	var rec record.Record
	if err := record.Decode(c.cmd.Body, record.NoPhys, &rec); err != nil {
		t.Fatalf("check-back body: %v", err)
	}
	name := s.nameAt(h.CommitLogOffset)
	idOK := "ok"
	if h.OffsetMsgID != protocol.OffsetMsgID(storeHost, h.CommitLogOffset) || rec.PhysOffset != h.CommitLogOffset {
		idOK = "BAD"
	}
	return fmt.Sprintf("check -> %s: half %d (%s) topic=%s msgId=%s txid=%s offsetMsgId=%s broker=%s body: %s/%d %s %s",
		c.to, h.TranStateTableOffset, name, h.Topic, h.MsgID, h.TransactionID, idOK, h.BrokerName,
		rec.Topic, rec.QueueID, rec.Body, propsLine(rec.UserProperties()))
}

// show prints the state of every half from the progress to the half
// queue's end, the saved progress and the saved check counts.
func (s *script) show() string {
	r := s.r
	st := r.svc.state()
	end := r.st.MaxQueueOffset(HalfTopic, 0)
	var b strings.Builder
	st.mu.Lock()
	fmt.Fprintf(&b, "settled below %d\n", st.mu.base)
	for k := st.mu.base; k < end; k++ {
		slot := txnOpen
		if i := k - st.mu.base; i < int64(len(st.mu.win)) {
			slot = st.mu.win[i]
		}
		fmt.Fprintf(&b, "half %d (%s): ", k, s.nameOf(k))
		switch slot {
		case txnOpen:
			fmt.Fprintf(&b, "open, %d checks", st.mu.checks[k])
			if (k < st.startHalfMax && !st.mu.searched[k]) || st.mu.mustSearch[k] {
				b.WriteString(", its real queue to be searched first")
			}
		case txnSettling:
			b.WriteString("being settled")
		case txnDropped:
			b.WriteString("dropped")
		default:
			fmt.Fprintf(&b, "settled by op %d", slot)
		}
		b.WriteString("\n")
	}
	st.mu.Unlock()
	b.WriteString("saved progress:")
	for _, topic := range []string{HalfTopic, OpHalfTopic} {
		if off, ok := r.progress.Query(topic); ok {
			fmt.Fprintf(&b, " %s=%d", topic, off)
		}
	}
	b.WriteString("\ntransactionChecks.json: ")
	raw, found, err := r.svc.checksFile().Read()
	switch {
	case err != nil:
		b.WriteString(err.Error())
	case !found:
		b.WriteString("none")
	default:
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			b.WriteString(err.Error())
		}
		b.Write(compact.Bytes())
	}
	return b.String()
}
