package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

func init() {
	register(command{name: "topic", summary: "topics: create, update, delete, list, route, describe, stats", run: runTopic})
}

var topicSubs = []subcommand{
	{"create", "create a topic on the masters (refuses to shrink one's queues unless --force)", topicCreate},
	{"update", "change an existing topic: more queues, permissions", topicUpdate},
	{"delete", "delete a topic from the brokers and the name servers", topicDelete},
	{"list", "list the topics the name servers know", topicList},
	{"route", "show a topic's route: brokers, addresses, queues, permissions", topicRoute},
	{"describe", "show a topic's queues with their offsets", func(args []string) error { return topicDescribe(args, false) }},
	{"stats", "per queue: min and max offsets, last store time", func(args []string) error { return topicDescribe(args, true) }},
}

func runTopic(args []string) error { return runSubcommand("topic", topicSubs, args) }

// brokerTopic is what one broker did with a topic create or update.
type brokerTopic struct {
	Broker string `json:"broker"`
	Addr   string `json:"addr"`
	// Action: created, updated or unchanged.
	Action     string `json:"action"`
	FromQueues int32  `json:"fromQueues,omitempty"`
	Queues     int32  `json:"queues"`
	Perm       string `json:"perm"`
}

func topicCreate(args []string) error {
	fs := newFlagSet("topic create", "TOPIC", "Create TOPIC on the masters (every cluster's, or --cluster's, or --broker's).\n"+
		"An existing topic is updated to --queues; fewer queues than it has are refused (the dropped\n"+
		"queues' messages would be hidden) unless --force.")
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic name (or the first argument)")
	queues := fs.Int("queues", 8, "read and write queues per broker (at least 1)")
	cluster := fs.String("cluster", "", "create on this cluster's masters only (default: every cluster)")
	brokers := fs.String("broker", "", "create on these broker addresses only, ';'-separated")
	order := fs.Bool("order", false, "mark the topic ordered")
	readOnly := fs.Bool("read-only", false, "permission: read only (default read and write)")
	force := fs.Bool("force", false, "allow fewer queues than the topic has")
	fromFile := fs.String("from-file", "", "create every topic FILE lists, in batches (one request a "+fmt.Sprint(client.TopicBatchSize)+" topics):\n"+
		"a line a topic (TOPIC [QUEUES], # comments), or RocketMQ's topics.json, or {\"topicConfigList\": [...]}")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *queues < 1 {
		return fmt.Errorf("--queues %d: a topic needs at least 1 queue", *queues)
	}
	perm := protocol.PermRead | protocol.PermWrite
	if *readOnly {
		perm = protocol.PermRead
	}
	if *fromFile != "" {
		tcs, err := readTopicFile(*fromFile, int32(*queues), int32(perm), *order)
		if err != nil {
			return err
		}
		return createTopicsFromFile(cf, tcs, client.TopicSpec{Cluster: *cluster, Brokers: client.ParseNameServers(*brokers), Force: *force})
	}
	t, err := topicArg(*topic, rest)
	if err != nil {
		return err
	}
	return applyTopic(cf, t, client.TopicSpec{Queues: *queues, Perm: perm, Order: *order, Cluster: *cluster,
		Brokers: client.ParseNameServers(*brokers), Force: *force})
}

// applyTopic runs Admin.ApplyTopic and prints what it did.
func applyTopic(cf *clientFlags, topic string, s client.TopicSpec) error {
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	changes, err := a.ApplyTopic(ctx, topic, s)
	if errors.Is(err, client.ErrTopicShrink) {
		return fmt.Errorf("%w (use --force to shrink anyway)", err)
	}
	if s.ExistingOnly && errors.Is(err, client.ErrNoRoute) && len(changes) == 0 {
		return fmt.Errorf("topic %s does not exist on the selected brokers (samsa topic create %s makes it)", topic, topic)
	}
	plan := make([]brokerTopic, len(changes))
	for i, c := range changes {
		plan[i] = brokerTopic{Broker: c.Broker, Addr: c.Addr, Action: c.Action, FromQueues: c.FromQueues, Queues: c.Queues, Perm: permString(c.Perm)}
	}
	if perr := printTopicPlan(cf.json, topic, plan); perr != nil && err == nil {
		err = perr
	}
	return err
}

func printTopicPlan(asJSON bool, topic string, plan []brokerTopic) error {
	if asJSON {
		return printJSON(map[string]any{"topic": topic, "brokers": plan})
	}
	for _, bt := range plan {
		switch bt.Action {
		case "created":
			fmt.Printf("topic %s created on %s (%s): %d queues, %s\n", topic, bt.Broker, bt.Addr, bt.Queues, bt.Perm)
		case "updated":
			fmt.Printf("topic %s updated on %s (%s): %d -> %d queues, %s\n", topic, bt.Broker, bt.Addr, bt.FromQueues, bt.Queues, bt.Perm)
		default:
			fmt.Printf("topic %s unchanged on %s (%s): %d queues, %s\n", topic, bt.Broker, bt.Addr, bt.Queues, bt.Perm)
		}
	}
	return nil
}

// parsePerm reads --perm: r, w or rw (RocketMQ's updateTopic -p 4, 2, 6).
func parsePerm(s string) (int, error) {
	switch strings.ToLower(s) {
	case "r", "4":
		return protocol.PermRead, nil
	case "w", "2":
		return protocol.PermWrite, nil
	case "rw", "wr", "6":
		return protocol.PermRead | protocol.PermWrite, nil
	}
	return 0, fmt.Errorf("--perm %q: want rw, r or w (or 6, 4, 2)", s)
}

func topicUpdate(args []string) error {
	fs := newFlagSet("topic update", "TOPIC", "Change TOPIC where it exists: more queues (--queues), permissions (--perm).\n"+
		"Fewer queues are refused unless --force (messages in dropped queues would be hidden).")
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic name (or the first argument)")
	queues := fs.Int("queues", 0, "new read and write queue count per broker (default: unchanged)")
	perm := fs.String("perm", "", "new permission: rw, r (read only) or w (write only) (default: unchanged)")
	cluster := fs.String("cluster", "", "this cluster's masters only (default: every cluster)")
	brokers := fs.String("broker", "", "these broker addresses only, ';'-separated")
	force := fs.Bool("force", false, "allow fewer queues than the topic has")
	t, err := parseTopic(fs, topic, args)
	if err != nil {
		return err
	}
	if *queues == 0 && *perm == "" {
		return errors.New("nothing to change: give --queues N and/or --perm rw|r|w")
	}
	if *queues < 0 {
		return fmt.Errorf("--queues %d: a topic needs at least 1 queue", *queues)
	}
	newPerm := -1
	if *perm != "" {
		if newPerm, err = parsePerm(*perm); err != nil {
			return err
		}
	}
	return applyTopic(cf, t, client.TopicSpec{Queues: *queues, Perm: newPerm, Cluster: *cluster,
		Brokers: client.ParseNameServers(*brokers), Force: *force, ExistingOnly: true})
}

func topicDelete(args []string) error {
	fs := newFlagSet("topic delete", "TOPIC", "Delete TOPIC from the masters that have it and from every name server\n"+
		"(its records stay until retention removes their segments).")
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic name (or the first argument)")
	cluster := fs.String("cluster", "", "delete on this cluster's masters only (default: every cluster)")
	t, err := parseTopic(fs, topic, args)
	if err != nil {
		return err
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	brokers, err := a.DeleteTopic(ctx, t, *cluster)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(map[string]any{"topic": t, "deleted": true, "brokers": brokers})
	}
	fmt.Printf("topic %s deleted from %s and the name servers\n", t, strings.Join(brokers, ", "))
	return nil
}

func topicList(args []string) error {
	fs := newFlagSet("topic list", "", "The topics the name servers know (user topics; --all for every one).")
	cf := addClientFlags(fs)
	all := fs.Bool("all", false, "include system topics (TBW102, %RETRY%..., broker and cluster names)")
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	topics, err := a.Topics(ctx)
	if err != nil {
		return err
	}
	if !*all {
		ci, err := a.ClusterInfo(ctx)
		if err != nil {
			return err
		}
		topics = userTopics(topics, ci)
	}
	if cf.json {
		if topics == nil {
			topics = []string{}
		}
		return printJSON(topics)
	}
	for _, t := range topics {
		fmt.Println(t)
	}
	return nil
}

// userTopics drops the topics brokers make for themselves.
func userTopics(topics []string, ci *protocol.ClusterInfo) []string {
	system := map[string]bool{"TBW102": true, "SELF_TEST_TOPIC": true, "OFFSET_MOVED_EVENT": true, "SCHEDULE_TOPIC_XXXX": true, "BenchmarkTest": true}
	for n := range ci.BrokerAddrTable {
		system[n] = true
	}
	for c := range ci.ClusterAddrTable {
		system[c] = true
	}
	var out []string
	for _, t := range topics {
		if system[t] || strings.HasPrefix(t, "RMQ_SYS_") || strings.HasPrefix(t, "%") || strings.HasPrefix(t, "rmq_sys_") {
			continue
		}
		out = append(out, t)
	}
	return out
}

func topicRoute(args []string) error {
	fs := newFlagSet("topic route", "TOPIC", "TOPIC's route as the name servers hold it.")
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic name (or the first argument)")
	t, err := parseTopic(fs, topic, args)
	if err != nil {
		return err
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	r, err := a.Route(ctx, t)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(r)
	}
	addrs := map[string]protocol.BrokerData{}
	for _, b := range r.BrokerDatas {
		addrs[b.BrokerName] = b
	}
	qds := append([]protocol.QueueData(nil), r.QueueDatas...)
	sort.Slice(qds, func(i, j int) bool { return qds[i].BrokerName < qds[j].BrokerName })
	tw := table("BROKER", "CLUSTER", "ADDRESSES", "READ", "WRITE", "PERM")
	for _, q := range qds {
		b := addrs[q.BrokerName]
		ids := make([]int64, 0, len(b.BrokerAddrs))
		for id := range b.BrokerAddrs {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		var as []string
		for _, id := range ids {
			as = append(as, fmt.Sprintf("%d=%s", id, b.BrokerAddrs[id]))
		}
		row(tw, q.BrokerName, b.Cluster, strings.Join(as, ","), q.ReadQueueNums, q.WriteQueueNums, permString(q.Perm))
	}
	return tw.Flush()
}

func permString(p int32) string {
	s := ""
	if p&protocol.PermRead != 0 {
		s += "R"
	}
	if p&protocol.PermWrite != 0 {
		s += "W"
	}
	if s == "" {
		s = "-"
	}
	return s
}

func topicDescribe(args []string, stats bool) error {
	name, about := "topic describe", "TOPIC's queues with their min and max offsets."
	if stats {
		name, about = "topic stats", "TOPIC's queues: min and max offsets, messages, and when the last one was stored."
	}
	fs := newFlagSet(name, "TOPIC", about)
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic name (or the first argument)")
	t, err := parseTopic(fs, topic, args)
	if err != nil {
		return err
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	st, err := a.TopicStatus(ctx, t, "")
	if err != nil {
		return err
	}
	var last map[client.MessageQueue]time.Time
	if stats {
		if last, err = a.LastStoreTimes(ctx, t); err != nil {
			return err
		}
	}
	if cf.json {
		type q struct {
			Broker        string `json:"broker"`
			Queue         int    `json:"queue"`
			Min           int64  `json:"minOffset"`
			Max           int64  `json:"maxOffset"`
			LastStoreTime string `json:"lastStoreTime,omitempty"`
		}
		out := make([]q, len(st))
		for i, s := range st {
			out[i] = q{Broker: s.Queue.BrokerName, Queue: s.Queue.QueueID, Min: s.MinOffset, Max: s.MaxOffset}
			if lt, ok := last[s.Queue]; ok && !lt.IsZero() {
				out[i].LastStoreTime = lt.Format(time.RFC3339Nano)
			}
		}
		return printJSON(map[string]any{"topic": t, "queues": out})
	}
	cols := []string{"BROKER", "QUEUE", "MIN", "MAX", "MESSAGES"}
	if stats {
		cols = append(cols, "LAST STORED")
	}
	tw := table(cols...)
	var total int64
	for _, s := range st {
		r := []any{s.Queue.BrokerName, s.Queue.QueueID, s.MinOffset, s.MaxOffset, s.MaxOffset - s.MinOffset}
		if stats {
			ls := "-"
			if lt := last[s.Queue]; !lt.IsZero() {
				ls = lt.Format("2006-01-02 15:04:05.000")
			}
			r = append(r, ls)
		}
		row(tw, r...)
		total += s.MaxOffset - s.MinOffset
	}
	row(tw, "total", len(st), "", "", total)
	return tw.Flush()
}
