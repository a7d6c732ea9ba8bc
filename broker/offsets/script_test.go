package offsets

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/samsamq/samsa/storage/vfs"
)

// Script tests: each testdata/*.txt file is a scenario for one Table on a
// fresh disk (MemFS) over a fake store, read by
// github.com/cockroachdb/datadriven: cases of
//
//	# comments
//	command args...
//	[input]
//	----
//	expected output
//
// separated by blank lines. `go test ./broker/offsets -run TestScripts
// -rewrite` writes the actual output in place; review it as a diff.
// Commands:
//
//	open [slave] [max-bytes=N]       a new Table on the disk as it is now (loads the file);
//	                                 slave: a slave's (commits kept as local)
//	commit GROUP TOPIC QUEUE OFFSET [system]
//	                                 Commit (system: CommitSystem)
//	query GROUP TOPIC QUEUE          Query
//	queue TOPIC QUEUE [min=N] [at=(MS,...)]
//	                                 the store's queue: first offset min, one message
//	                                 stored at each MS (Unix ms) from there
//	born GROUP [at=MS]               the group's run began at MS; without at= it has
//	                                 no member
//	start GROUP TOPIC QUEUE [nozero] [from=last|first|timestamp] [ts=MS]
//	                                 QUERY_CONSUMER_OFFSET (Start; nozero:
//	                                 setZeroIfNotFound=false), then, when not found,
//	                                 where a client with that consumeFromWhere starts
//	bytime TOPIC QUEUE MS [upper]    SEARCH_OFFSET_BY_TIMESTAMP (ByTime)
//	remove topic=T | group=G         RemoveTopic, RemoveGroup
//	save [force]                     Save
//	crash                            power loss, then open on what the disk kept
//	restart                          Save(true), then open
//	tick D                           move the clock (the set-aside files' stamps)
//	disk full|free                   the disk takes nothing more (ENOSPC), or again
//	write-file                       the input as consumerOffset.json (synced)
//	file                             consumerOffset.json as on disk, and what else the
//	                                 config directory holds
//	sync [refuse=(KEY,...)] [fail=KEY]
//	                                 a slave's round (Sync) with a master whose table
//	                                 is the input ("topic@group queue=offset ..." a
//	                                 line); the push of KEY (topic@group/queue) is
//	                                 refused, or fails
//	drop-local                       DropLocal
//	show                             the table, the local commits, the groups and
//	                                 their topics
//
// After each command's output come the lines the Table logged ("log:").
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		r := newRig(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := r.run(t, d)
			for _, l := range r.logs.take() {
				out += "log: " + l + "\n"
			}
			return out
		})
	})
}

func (r *rig) run(t *testing.T, d *datadriven.TestData) string {
	if d.Input != "" && d.Cmd != "write-file" && d.Cmd != "sync" {
		d.Fatalf(t, "%s takes no input", d.Cmd)
	}
	arg := func(i int) string {
		if i >= len(d.CmdArgs) {
			d.Fatalf(t, "%s: argument %d missing", d.Cmd, i+1)
		}
		return d.CmdArgs[i].Key
	}
	num := func(i int) int64 {
		n, err := strconv.ParseInt(arg(i), 10, 64)
		if err != nil {
			d.Fatalf(t, "%s: argument %d: %v", d.Cmd, i+1, err)
		}
		return n
	}
	switch d.Cmd {
	case "open":
		r.slave = d.HasArg("slave")
		r.maxBytes = 0
		d.MaybeScanArgs(t, "max-bytes", &r.maxBytes)
		r.open()
		return "ok\n"
	case "commit":
		if d.HasArg("system") {
			r.tbl.CommitSystem(arg(0), arg(1), int32(num(2)), num(3))
			return "ok\n"
		}
		if err := r.tbl.Commit(arg(0), arg(1), int32(num(2)), num(3)); err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		return "ok\n"
	case "query":
		if off, ok := r.tbl.Query(arg(0), arg(1), int32(num(2))); ok {
			return fmt.Sprintf("%d\n", off)
		}
		return "not found\n"
	case "queue":
		q := fakeQueue{}
		d.MaybeScanArgs(t, "min", &q.min)
		if a, ok := d.Arg("at"); ok {
			for _, v := range a.Vals {
				ms, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					d.Fatalf(t, "at: %v", err)
				}
				q.times = append(q.times, ms)
			}
		}
		r.st.set(arg(0), int32(num(1)), q)
		return fmt.Sprintf("%s/%d: offsets [%d, %d)\n", arg(0), num(1), q.min, q.min+int64(len(q.times)))
	case "born":
		r.mu.Lock()
		defer r.mu.Unlock()
		if !d.HasArg("at") {
			delete(r.born, arg(0))
			return "no member\n"
		}
		var ms int64
		d.ScanArgs(t, "at", &ms)
		r.born[arg(0)] = time.UnixMilli(ms)
		return "ok\n"
	case "start":
		return r.start(t, d, arg(0), arg(1), int32(num(2)))
	case "bytime":
		return fmt.Sprintf("%d\n", ByTime(r.st, arg(0), int32(num(1)), num(2), d.HasArg("upper")))
	case "remove":
		var name string
		switch {
		case d.MaybeScanArgs(t, "topic", &name):
			r.tbl.RemoveTopic(name)
		case d.MaybeScanArgs(t, "group", &name):
			r.tbl.RemoveGroup(name)
		default:
			d.Fatalf(t, "remove: topic= or group=")
		}
		return "ok\n"
	case "save":
		if err := r.tbl.Save(d.HasArg("force")); err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		return "ok\n"
	case "crash":
		r.fs = r.fs.CrashClone(r.rng)
		r.open()
		return "ok\n"
	case "restart":
		if err := r.tbl.Save(true); err != nil {
			d.Fatalf(t, "save: %v", err)
		}
		r.open()
		return "ok\n"
	case "tick":
		dur, err := time.ParseDuration(arg(0))
		if err != nil {
			d.Fatalf(t, "tick: %v", err)
		}
		r.mu.Lock()
		r.now = r.now.Add(dur)
		r.mu.Unlock()
		return "ok\n"
	case "disk":
		switch arg(0) {
		case "full":
			r.fs.SetCapacity(r.fs.Used())
		case "free":
			r.fs.SetCapacity(vfs.DefaultMemCapacity)
		default:
			d.Fatalf(t, "disk full or free")
		}
		return "ok\n"
	case "write-file":
		if err := r.fs.MkdirAll(configDir); err != nil {
			d.Fatalf(t, "%v", err)
		}
		if err := vfs.WriteFileAtomic(r.fs, configDir+"/"+FileName, []byte(d.Input)); err != nil {
			d.Fatalf(t, "%v", err)
		}
		return "ok\n"
	case "file":
		return r.showFile(t)
	case "sync":
		return r.sync(t, d)
	case "drop-local":
		r.tbl.DropLocal()
		return "ok\n"
	case "show":
		return r.show()
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	}
}

// start asks Start, then plays the client: not found, it starts where its
// consumeFromWhere says (RocketMQ's RebalancePushImpl.computePullFromWhere
// for a topic that is not a retry topic).
func (r *rig) start(t *testing.T, d *datadriven.TestData, group, topic string, queue int32) string {
	off, ok := r.tbl.Start(group, topic, queue, !d.HasArg("nozero"))
	var out string
	switch _, committed := r.tbl.Query(group, topic, queue); {
	case ok && committed:
		out = fmt.Sprintf("committed %d", off)
	case ok:
		out = fmt.Sprintf("%d: nothing older than the group", off)
	default:
		out = "not found"
	}
	from := ""
	d.MaybeScanArgs(t, "from", &from)
	if ok || from == "" {
		return out + "\n"
	}
	switch from {
	case "last": // GET_MAX_OFFSET
		off = r.st.MaxQueueOffset(topic, queue)
	case "first": // 0; a pull below the queue's min offset is moved up to it
		off = max(0, r.st.MinQueueOffset(topic, queue))
	case "timestamp": // SEARCH_OFFSET_BY_TIMESTAMP
		var ts int64
		d.ScanArgs(t, "ts", &ts)
		off = ByTime(r.st, topic, queue, ts, false)
	default:
		d.Fatalf(t, "from: last, first or timestamp")
	}
	return fmt.Sprintf("%s; CONSUME_FROM_%s starts at %d\n", out, strings.ToUpper(from), off)
}

func (r *rig) showFile(t *testing.T) string {
	var out strings.Builder
	if b, found := r.file(); found {
		out.WriteString(b)
		if !strings.HasSuffix(b, "\n") {
			out.WriteString("\n")
		}
	} else {
		out.WriteString("no file\n")
	}
	names, err := r.fs.List(configDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	slices.Sort(names)
	for _, n := range names {
		if n != FileName {
			fmt.Fprintf(&out, "beside it: %s\n", n)
		}
	}
	if n := r.setAside.Load(); n > 0 {
		fmt.Fprintf(&out, "set aside: %d\n", n)
	}
	return out.String()
}

func parseKey(t *testing.T, d *datadriven.TestData, s string) Key {
	name, q, ok := strings.Cut(s, "/")
	topic, group, ok2 := strings.Cut(name, "@")
	id, err := strconv.Atoi(q)
	if !ok || !ok2 || err != nil {
		d.Fatalf(t, "key %q: want topic@group/queue", s)
	}
	return Key{topic, group, int32(id)}
}

func (r *rig) sync(t *testing.T, d *datadriven.TestData) string {
	master := map[string]map[int32]int64{}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		qs := map[int32]int64{}
		for _, e := range f[1:] {
			q, off, _ := strings.Cut(e, "=")
			id, err1 := strconv.Atoi(q)
			n, err2 := strconv.ParseInt(off, 10, 64)
			if err1 != nil || err2 != nil {
				d.Fatalf(t, "sync: %q: want queue=offset", e)
			}
			qs[int32(id)] = n
		}
		master[f[0]] = qs
	}
	refuse := map[Key]bool{}
	if a, ok := d.Arg("refuse"); ok {
		for _, v := range a.Vals {
			refuse[parseKey(t, d, v)] = true
		}
	}
	var fail Key
	if a, ok := d.Arg("fail"); ok {
		fail = parseKey(t, d, a.SingleVal(t))
	}
	var out strings.Builder
	err := r.tbl.Sync("m1:10911", master, func(k Key, off int64) error {
		switch {
		case refuse[k]:
			fmt.Fprintf(&out, "push %s@%s/%d=%d: refused\n", k.Topic, k.Group, k.Queue, off)
			return &Refused{Reason: "No topic route info in name server"}
		case k == fail:
			fmt.Fprintf(&out, "push %s@%s/%d=%d: fails\n", k.Topic, k.Group, k.Queue, off)
			return fmt.Errorf("broker: UPDATE_CONSUMER_OFFSET to master m1:10911: timeout")
		}
		fmt.Fprintf(&out, "push %s@%s/%d=%d: taken\n", k.Topic, k.Group, k.Queue, off)
		return nil
	})
	if err != nil {
		fmt.Fprintf(&out, "error: %v\n", err)
	} else {
		out.WriteString("ok\n")
	}
	return out.String()
}

func (r *rig) show() string {
	var out strings.Builder
	line := func(what string, m map[Key]int64) {
		keys := slices.SortedFunc(maps.Keys(m), compareKeys)
		if len(keys) == 0 {
			fmt.Fprintf(&out, "%s: none\n", what)
			return
		}
		fmt.Fprintf(&out, "%s:", what)
		for _, k := range keys {
			fmt.Fprintf(&out, " %s@%s/%d=%d", k.Topic, k.Group, k.Queue, m[k])
		}
		out.WriteString("\n")
	}
	line("table", r.tbl.Snapshot())
	if r.slave {
		line("local", r.tbl.Local())
	}
	groups := r.tbl.Groups()
	fmt.Fprintf(&out, "groups: %v\n", groups)
	topics := map[string]bool{}
	for _, g := range groups {
		ts := r.tbl.TopicsOf(g)
		fmt.Fprintf(&out, "  %s on %v\n", g, ts)
		for _, t := range ts {
			topics[t] = true
		}
	}
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		fmt.Fprintf(&out, "  %s read by %v\n", t, r.tbl.GroupsOf(t))
	}
	r.tbl.mu.RLock()
	fmt.Fprintf(&out, "bytes: %d\n", r.tbl.mu.bytes)
	r.tbl.mu.RUnlock()
	return out.String()
}
