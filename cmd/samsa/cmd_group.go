package main

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/samsamq/samsa/client"
)

func init() {
	register(command{name: "group", summary: "consumer groups: list, describe, delete, reset-offsets", run: runGroup})
}

var groupSubs = []subcommand{
	{"list", "list the subscription groups the masters know", groupList},
	{"describe", "a group's members (addresses, client versions), queue allocation and lag per queue", groupDescribe},
	{"delete", "delete a group's subscription config (and its offsets) from the masters", groupDelete},
	{"reset-offsets", "move a stopped group's offsets: --to earliest|latest|TIME|OFFSET [--dry-run]", groupReset},
}

func runGroup(args []string) error { return runSubcommand("group", groupSubs, args) }

// systemGroup: the groups brokers and RocketMQ's tools make for themselves.
func systemGroup(g string) bool {
	switch g {
	case "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION",
		"CID_ONSAPI_OWNER", "CID_ONSAPI_PULL", "CID_SYS_RMQ_TRANS":
		return true
	}
	return strings.HasPrefix(g, "CID_RMQ_SYS_")
}

// groupArg takes the group from --group or the first argument.
func groupArg(flagGroup string, rest []string) (string, error) {
	if flagGroup != "" {
		if len(rest) > 0 {
			return "", fmt.Errorf("unexpected arguments %q", rest)
		}
		return flagGroup, nil
	}
	if len(rest) == 1 {
		return rest[0], nil
	}
	if len(rest) > 1 {
		return "", fmt.Errorf("unexpected arguments %q", rest[1:])
	}
	return "", errors.New("a consumer group is required (GROUP or --group G)")
}

func groupList(args []string) error {
	fs := newFlagSet("group list", "", "The subscription groups of every master, with their online members.")
	cf := addClientFlags(fs)
	all := fs.Bool("all", false, "include system groups (TOOLS_CONSUMER, CID_RMQ_SYS_...)")
	cluster := fs.String("cluster", "", "this cluster's masters only (default: every cluster)")
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
	groups, err := a.Groups(ctx, *cluster)
	if err != nil {
		return err
	}
	type grow struct {
		Group   string   `json:"group"`
		Brokers []string `json:"brokers"`
		Members int      `json:"members"`
		// Model is the online members' message model (CLUSTERING or
		// BROADCASTING), "" with none online.
		Model string `json:"messageModel,omitempty"`
	}
	rows := []grow{}
	for g, byBroker := range groups {
		if !*all && systemGroup(g) {
			continue
		}
		r := grow{Group: g}
		for b := range byBroker {
			r.Brokers = append(r.Brokers, b)
		}
		sort.Strings(r.Brokers)
		members, _, err := a.GroupConnections(ctx, g)
		if err != nil {
			return err
		}
		r.Members = len(members)
		if len(members) > 0 {
			r.Model = members[0].Model
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Group < rows[j].Group })
	if cf.json {
		return printJSON(rows)
	}
	if len(rows) == 0 {
		fmt.Println("no consumer group")
		return nil
	}
	tw := table("GROUP", "MEMBERS", "MODEL", "BROKERS")
	for _, r := range rows {
		row(tw, r.Group, r.Members, orDash(r.Model), strings.Join(r.Brokers, ","))
	}
	return tw.Flush()
}

// groupQueue is one queue of group describe.
type groupQueue struct {
	Topic     string `json:"topic"`
	Broker    string `json:"broker"`
	Queue     int    `json:"queue"`
	Max       int64  `json:"maxOffset"`
	Committed int64  `json:"committed"`
	Lag       int64  `json:"lag"`
	// Member is the client id the queue falls to under the default
	// allocation (AllocateMessageQueueAveragely), "" with no member.
	Member string `json:"member,omitempty"`
	// LastConsumed is the store time of the last message the group
	// consumed in the queue (RFC 3339; "" when none).
	LastConsumed string `json:"lastConsumed,omitempty"`
	// InFlight and Redelivered: a POP group's messages handed out and not
	// acknowledged, and those handed out again since the broker started
	// (Committed is then the lowest offset not acknowledged).
	InFlight    int64 `json:"popInFlight,omitempty"`
	Redelivered int64 `json:"popRedelivered,omitempty"`
}

func groupDescribe(args []string) error {
	fs := newFlagSet("group describe", "GROUP", "GROUP's online members (address, language, client version), subscriptions, and per queue\n"+
		"its committed offset, lag, and the member the default allocation (AVG, the clients' default)\n"+
		"gives the queue.")
	cf := addClientFlags(fs)
	group := fs.String("group", "", "consumer group (or the first argument)")
	topic := fs.String("topic", "", "only this topic (default: the group's subscriptions, else where it committed offsets)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	g, err := groupArg(*group, rest)
	if err != nil {
		return err
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	members, subs, err := a.GroupConnections(ctx, g)
	if err != nil {
		return err
	}
	var topics []string
	switch {
	case *topic != "":
		topics = []string{*topic}
	case len(subs) > 0:
		for t := range subs {
			topics = append(topics, t)
		}
		sort.Strings(topics)
	default:
		if topics, err = a.GroupTopics(ctx, g); err != nil {
			return err
		}
		// a POP group commits no offsets: the brokers name its topics
		all, err := a.ConsumeStats(ctx, g, "")
		if err != nil {
			return err
		}
		for q := range all {
			if !slices.Contains(topics, q.Topic) {
				topics = append(topics, q.Topic)
			}
		}
		sort.Strings(topics)
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.ClientID
	}
	var queues []groupQueue
	var lag, popInFlight, popRedelivered int64
	for _, t := range topics {
		st, err := a.TopicStatus(ctx, t, g)
		if err != nil {
			return err
		}
		owner := map[client.MessageQueue]string{}
		if len(ids) > 0 {
			mqs := make([]client.MessageQueue, len(st))
			for i, s := range st {
				mqs[i] = s.Queue
			}
			for _, id := range ids {
				for _, q := range (client.AllocateAveraged{}).Allocate(id, ids, mqs) {
					owner[q] = id
				}
			}
		}
		progress, err := a.ConsumeStats(ctx, g, t)
		if err != nil {
			return err
		}
		for _, s := range st {
			p := progress[s.Queue]
			gq := groupQueue{Topic: t, Broker: s.Queue.BrokerName, Queue: s.Queue.QueueID, Max: s.MaxOffset,
				Committed: s.Committed, Lag: s.Lag, Member: owner[s.Queue], InFlight: p.InFlight, Redelivered: p.Redelivered}
			if s.Committed < 0 && p.ConsumerOffset > 0 { // POP: what lies below the lowest offset in flight is consumed
				gq.Committed, gq.Lag = p.ConsumerOffset, max(s.MaxOffset-p.ConsumerOffset, 0)
			}
			popInFlight, popRedelivered = popInFlight+p.InFlight, popRedelivered+p.Redelivered
			if lc := progress[s.Queue].LastConsumed; !lc.IsZero() {
				gq.LastConsumed = lc.Format(time.RFC3339Nano)
			}
			queues = append(queues, gq)
			lag += gq.Lag
		}
	}
	if cf.json {
		if queues == nil {
			queues = []groupQueue{}
		}
		if subs == nil {
			subs = map[string]string{}
		}
		return printJSON(map[string]any{"group": g, "members": members, "subscriptions": subs, "lag": lag, "queues": queues,
			"popInFlight": popInFlight, "popRedelivered": popRedelivered})
	}
	model := ""
	if len(members) > 0 {
		model = ", " + members[0].Model
	}
	fmt.Printf("group %s: %d online member(s)%s, lag %d\n", g, len(members), model, lag)
	if popInFlight > 0 || popRedelivered > 0 {
		fmt.Printf("POP: %d in flight (handed out, not acknowledged), %d handed out again since the brokers started\n",
			popInFlight, popRedelivered)
	}
	if len(members) > 0 {
		fmt.Println()
		tw := table("CLIENT ID", "ADDRESS", "LANGUAGE", "VERSION", "BROKERS")
		for _, m := range members {
			row(tw, m.ClientID, m.Addr, m.Language, m.Version, strings.Join(m.Brokers, ","))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(subs) > 0 {
		fmt.Println()
		tw := table("TOPIC", "SUBSCRIPTION")
		for _, t := range topics {
			if s, ok := subs[t]; ok {
				row(tw, t, s)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(queues) > 0 {
		fmt.Println()
		tw := table("TOPIC", "BROKER", "QUEUE", "MAX", "COMMITTED", "LAG", "IN FLIGHT", "REDELIVERED", "LAST CONSUMED", "MEMBER (AVG)")
		for _, q := range queues {
			committed := strconv.FormatInt(q.Committed, 10)
			if q.Committed < 0 {
				committed = "-"
			}
			last := "-"
			if t, err := time.Parse(time.RFC3339Nano, q.LastConsumed); err == nil {
				last = t.Format("2006-01-02 15:04:05.000")
			}
			row(tw, q.Topic, q.Broker, q.Queue, q.Max, committed, q.Lag, q.InFlight, q.Redelivered, last, orDash(q.Member))
		}
		return tw.Flush()
	}
	return nil
}

func groupDelete(args []string) error {
	fs := newFlagSet("group delete", "GROUP", "Delete GROUP's subscription config and its committed offsets from the masters.\n"+
		"A group with online members is refused unless --force (they would recreate it).")
	cf := addClientFlags(fs)
	group := fs.String("group", "", "consumer group (or the first argument)")
	cluster := fs.String("cluster", "", "this cluster's masters only (default: every cluster)")
	keep := fs.Bool("keep-offsets", false, "keep the group's committed offsets")
	force := fs.Bool("force", false, "delete even with members online")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	g, err := groupArg(*group, rest)
	if err != nil {
		return err
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	if !*force {
		members, _, err := a.GroupConnections(ctx, g)
		if err != nil {
			return err
		}
		if len(members) > 0 {
			return fmt.Errorf("group %s has %d online member(s): stop them first, or --force", g, len(members))
		}
	}
	brokers, err := a.DeleteGroup(ctx, g, *cluster, !*keep)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(map[string]any{"group": g, "deleted": true, "offsetsDeleted": !*keep, "brokers": brokers})
	}
	what := "and its offsets "
	if *keep {
		what = "(offsets kept) "
	}
	fmt.Printf("group %s %sdeleted from %s\n", g, what, strings.Join(brokers, ", "))
	return nil
}

// parseResetTarget reads --to: earliest, latest, an offset (an integer),
// or a time (RFC 3339, 2006-01-02 15:04:05, 2006-01-02, or -10m).
func parseResetTarget(s string) (client.ResetTarget, error) {
	t := client.ResetTarget{Offset: -1}
	switch strings.ToLower(s) {
	case "":
		return t, errors.New("--to is required: earliest, latest, a TIME or an OFFSET")
	case "earliest", "first", "min":
		t.Earliest = true
		return t, nil
	case "latest", "last", "max":
		t.Latest = true
		return t, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return t, fmt.Errorf("--to %d: an offset is at least 0", n)
		}
		t.Offset = n
		return t, nil
	}
	tm, err := parseTime(s)
	if err != nil {
		return t, fmt.Errorf("--to: %w; or earliest, latest, an offset", err)
	}
	t.Time = tm
	return t, nil
}

func groupReset(args []string) error {
	fs := newFlagSet("group reset-offsets", "GROUP", "Move GROUP's committed offsets on every queue of --topic. The group's consumers must be\n"+
		"stopped (a running member would write its own offsets back). --to OFFSET is clamped into each\n"+
		"queue's [min, max]; --to TIME takes each queue's first message stored at or after TIME.")
	cf := addClientFlags(fs)
	group := fs.String("group", "", "consumer group (or the first argument)")
	topic := fs.String("topic", "", "topic (required)")
	to := fs.String("to", "", "earliest, latest, a TIME (RFC 3339, 2006-01-02 15:04:05, -10m) or an OFFSET")
	dry := fs.Bool("dry-run", false, "print where the offsets would go, change nothing")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	g, err := groupArg(*group, rest)
	if err != nil {
		return err
	}
	if *topic == "" {
		return errors.New("--topic T is required")
	}
	target, err := parseResetTarget(*to)
	if err != nil {
		return err
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	moves, err := a.ResetOffsets(ctx, g, *topic, target, *dry)
	if err != nil {
		return err
	}
	if cf.json {
		type mv struct {
			Broker string `json:"broker"`
			Queue  int    `json:"queue"`
			From   int64  `json:"from"`
			To     int64  `json:"to"`
		}
		out := make([]mv, len(moves))
		for i, m := range moves {
			out[i] = mv{m.Queue.BrokerName, m.Queue.QueueID, m.From, m.To}
		}
		return printJSON(map[string]any{"group": g, "topic": *topic, "dryRun": *dry, "queues": out})
	}
	tw := table("BROKER", "QUEUE", "FROM", "TO")
	for _, m := range moves {
		from := strconv.FormatInt(m.From, 10)
		if m.From < 0 {
			from = "-"
		}
		row(tw, m.Queue.BrokerName, m.Queue.QueueID, from, m.To)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *dry {
		fmt.Printf("dry run: group %s's offsets on %s were not changed\n", g, *topic)
	} else {
		fmt.Printf("group %s's offsets on %s reset (%d queues) at %s\n", g, *topic, len(moves), time.Now().Format(time.RFC3339))
	}
	return nil
}
