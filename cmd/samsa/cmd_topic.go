package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

func init() {
	register(command{name: "topic", summary: "topics: create, list, route, describe", run: runTopic})
}

const topicUsage = `usage: samsa topic <create|list|route|describe> [flags] [TOPIC]

  create    create (or update) a topic on the brokers
  list      list the topics the name servers know
  route     show a topic's route: brokers, addresses, queues, permissions
  describe  show a topic's queues with their offsets
`

func runTopic(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stderr, topicUsage)
		if len(args) == 0 {
			return fmt.Errorf("a subcommand is required")
		}
		return nil
	}
	switch args[0] {
	case "create":
		return topicCreate(args[1:])
	case "list":
		return topicList(args[1:])
	case "route":
		return topicRoute(args[1:])
	case "describe":
		return topicDescribe(args[1:])
	}
	fmt.Fprint(os.Stderr, topicUsage)
	return fmt.Errorf("unknown topic subcommand %q", args[0])
}

func topicCreate(args []string) error {
	fs := flag.NewFlagSet("topic create", flag.ContinueOnError)
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic name (or the first argument)")
	queues := fs.Int("queues", 8, "read and write queues per broker")
	cluster := fs.String("cluster", "", "create on this cluster's masters only (default: every cluster)")
	brokers := fs.String("broker", "", "create on these broker addresses only, ';'-separated")
	order := fs.Bool("order", false, "mark the topic ordered")
	readOnly := fs.Bool("read-only", false, "permission: read only (default read and write)")
	t, err := parseTopic(fs, topic, args)
	if err != nil {
		return err
	}
	o := client.TopicOptions{Queues: *queues, Cluster: *cluster, Order: *order, Brokers: client.ParseNameServers(*brokers)}
	if *readOnly {
		o.Perm = protocol.PermRead
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	if err := a.CreateTopic(ctx, t, o); err != nil {
		return err
	}
	if cf.json {
		return printJSON(map[string]any{"topic": t, "queues": *queues, "created": true})
	}
	fmt.Printf("topic %s created (%d queues per broker)\n", t, *queues)
	return nil
}

func topicList(args []string) error {
	fs := flag.NewFlagSet("topic list", flag.ContinueOnError)
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
	fs := flag.NewFlagSet("topic route", flag.ContinueOnError)
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

func topicDescribe(args []string) error {
	fs := flag.NewFlagSet("topic describe", flag.ContinueOnError)
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
	if cf.json {
		type q struct {
			Broker string `json:"broker"`
			Queue  int    `json:"queue"`
			Min    int64  `json:"minOffset"`
			Max    int64  `json:"maxOffset"`
		}
		out := make([]q, len(st))
		for i, s := range st {
			out[i] = q{s.Queue.BrokerName, s.Queue.QueueID, s.MinOffset, s.MaxOffset}
		}
		return printJSON(map[string]any{"topic": t, "queues": out})
	}
	tw := table("BROKER", "QUEUE", "MIN", "MAX", "MESSAGES")
	var total int64
	for _, s := range st {
		row(tw, s.Queue.BrokerName, s.Queue.QueueID, s.MinOffset, s.MaxOffset, s.MaxOffset-s.MinOffset)
		total += s.MaxOffset - s.MinOffset
	}
	row(tw, "total", len(st), "", "", total)
	return tw.Flush()
}
