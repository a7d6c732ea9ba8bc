package main

import (
	"errors"
	"fmt"

	"github.com/samsamq/samsa/client"
)

func init() {
	register(command{name: "offsets", summary: "a consumer group's committed offsets and lag per queue", run: runOffsets})
}

func runOffsets(args []string) error {
	fs := newFlagSet("offsets", "", "A consumer group's committed offsets and lag per queue (see also samsa group describe).")
	cf := addClientFlags(fs)
	group := fs.String("group", "", "consumer group (required)")
	topic := fs.String("topic", "", "topic (default: every topic where the group committed an offset)")
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	if *group == "" {
		return errors.New("--group G is required")
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	topics := []string{*topic}
	if *topic == "" {
		if topics, err = a.GroupTopics(ctx, *group); err != nil {
			return err
		}
	}
	type qrow struct {
		Topic     string `json:"topic"`
		Broker    string `json:"broker"`
		Queue     int    `json:"queue"`
		Min       int64  `json:"minOffset"`
		Max       int64  `json:"maxOffset"`
		Committed int64  `json:"committed"`
		Lag       int64  `json:"lag"`
	}
	var rows []qrow
	var statuses []client.QueueStatus
	for _, t := range topics {
		st, err := a.TopicStatus(ctx, t, *group)
		if err != nil {
			return err
		}
		statuses = append(statuses, st...)
	}
	var lag int64
	for _, s := range statuses {
		rows = append(rows, qrow{s.Queue.Topic, s.Queue.BrokerName, s.Queue.QueueID, s.MinOffset, s.MaxOffset, s.Committed, s.Lag})
		lag += s.Lag
	}
	if cf.json {
		if rows == nil {
			rows = []qrow{}
		}
		return printJSON(map[string]any{"group": *group, "lag": lag, "queues": rows})
	}
	if len(rows) == 0 {
		fmt.Printf("group %s has no committed offset\n", *group)
		return nil
	}
	tw := table("TOPIC", "BROKER", "QUEUE", "MIN", "MAX", "COMMITTED", "LAG")
	for _, r := range rows {
		committed := fmt.Sprint(r.Committed)
		if r.Committed < 0 {
			committed = "-"
		}
		row(tw, r.Topic, r.Broker, r.Queue, r.Min, r.Max, committed, r.Lag)
	}
	row(tw, "total", "", len(rows), "", "", "", lag)
	return tw.Flush()
}
