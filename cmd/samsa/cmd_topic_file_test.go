package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsamq/samsa/client"
)

// topic create --from-file: text lines and RocketMQ's topics.json, in
// batches; a second run finds them unchanged, a shrink is refused without
// --force; every topic routes once the command returns.
func TestTopicCreateFromFile(t *testing.T) {
	dev, ns := devCluster(t)
	dir := t.TempDir()
	var text strings.Builder
	text.WriteString("# topics for the batch test\n\n")
	const n = 2500 // two batches
	for i := range n {
		fmt.Fprintf(&text, "file-%04d\n", i)
	}
	text.WriteString("file-wide 4 # four queues\n")
	txt := filepath.Join(dir, "topics.txt")
	if err := os.WriteFile(txt, []byte(text.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustCLI(t, ns, "", runTopic, "create", "--from-file", txt, "--queues", "2")
	if !strings.Contains(out, fmt.Sprintf("%d topics created, 0 updated, 0 unchanged", n+1)) {
		t.Fatalf("from text: %q", out)
	}
	if out := mustCLI(t, ns, "", runTopic, "create", "--from-file", txt, "--queues", "2"); !strings.Contains(out, fmt.Sprintf("0 topics created, 0 updated, %d unchanged", n+1)) {
		t.Fatalf("again: %q", out)
	}
	if _, err := cli(t, ns, "", runTopic, "create", "--from-file", txt, "--queues", "1"); err == nil || !strings.Contains(err.Error(), "queues") {
		t.Fatalf("shrink without --force: %v", err)
	}
	js := filepath.Join(dir, "topics.json")
	if err := os.WriteFile(js, []byte(`{"topicConfigTable":{"json-a":{"topicName":"json-a","readQueueNums":3,"writeQueueNums":3,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false}},"dataVersion":{"timestamp":1,"counter":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, ns, "", runTopic, "create", "--from-file", js); !strings.Contains(out, "1 topics created") {
		t.Fatalf("from topics.json: %q", out)
	}
	a, err := client.NewAdmin(client.ClientOptions{NameServers: []string{dev.NamesrvAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for topic, queues := range map[string]int32{"file-0000": 2, fmt.Sprintf("file-%04d", n-1): 2, "file-wide": 4, "json-a": 3} {
		rd, err := a.Route(context.Background(), topic)
		if err != nil || rd.QueueDatas[0].WriteQueueNums != queues {
			t.Fatalf("%s: route %+v %v", topic, rd, err)
		}
	}
}
