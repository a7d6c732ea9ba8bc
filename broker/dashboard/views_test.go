package dashboard

import (
	"net/http"
	"reflect"
	"testing"
)

// TestOverview: the Source's overview goes out as it is.
func TestOverview(t *testing.T) {
	ratio := 0.25
	want := Overview{BrokerName: "broker-a", Cluster: "c", Role: "SYNC_MASTER", Addr: "127.0.0.1:10911", PutTotal: 7,
		PutTps: [3]float64{1, 2, 3}, DiskRatio: &ratio, NameServers: []string{"ns:9876"},
		Slaves: []Slave{{Addr: "s:1", AckOffset: 5, InSync: true}}, Topics: []TopicCount{{Topic: "t", Puts: 7}}}
	s := server(t, &fakeSource{overview: want}, Options{})
	var got Overview
	get(t, s, "/ui/api/overview", &got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("overview %+v, want %+v", got, want)
	}
}

// TestTopics: the list comes sorted; one topic needs its name, comes
// with its queues and groups sorted and its counts summed from its
// queues.
func TestTopics(t *testing.T) {
	src := &fakeSource{
		topics: []Topic{{Name: "b"}, {Name: "a", Messages: 3}},
		topic: TopicDetail{Topic: Topic{Name: "t", ReadQueues: 2, Messages: 99, MaxTotal: 99},
			Queues: []Queue{{Queue: 1, MinOffset: 2, MaxOffset: 5}, {Queue: 0, MinOffset: 4, MaxOffset: 3}}, Groups: []string{"g2", "g1"}},
	}
	s := server(t, src, Options{})
	var list []Topic
	get(t, s, "/ui/api/topics", &list)
	if len(list) != 2 || list[0].Name != "a" || list[0].Messages != 3 || list[1].Name != "b" {
		t.Fatalf("topics: %+v", list)
	}
	var d TopicDetail
	get(t, s, "/ui/api/topic?topic=t%20x", &d)
	if src.mu.topic != "t x" {
		t.Fatalf("asked for topic %q", src.mu.topic)
	}
	// Messages: (5-2) + max(3-4, 0); MaxTotal: 5+3.
	if d.Name != "t" || d.ReadQueues != 2 || d.Messages != 3 || d.MaxTotal != 8 || d.Queues[0].Queue != 0 || d.Queues[1].Queue != 1 ||
		!reflect.DeepEqual(d.Groups, []string{"g1", "g2"}) {
		t.Fatalf("topic: %+v", d)
	}
	for _, p := range []string{"/ui/api/topic", "/ui/api/topic?topic=", "/ui/api/topic?name=t"} {
		getErr(t, s, p, http.StatusBadRequest)
	}
}

// TestGroups: the list comes sorted with topics never null; one group
// needs its name, and comes with its members and queues sorted and its
// lag summed from its queues.
func TestGroups(t *testing.T) {
	src := &fakeSource{
		groups: []Group{{Name: "z", Lag: 1}, {Name: "a", Topics: []string{"t"}}},
		group: GroupDetail{Name: "g", Lag: 99, Members: []Member{{ClientID: "c2"}, {ClientID: "c1"}},
			Queues: []Progress{{Topic: "u", Queue: 0, Lag: 1}, {Topic: "t", Queue: 1, Lag: 2}, {Topic: "t", Queue: 0, Lag: 4, Committed: -1}}},
	}
	s := server(t, src, Options{})
	var list []Group
	body := get(t, s, "/ui/api/groups", &list)
	if len(list) != 2 || list[0].Name != "a" || list[1].Name != "z" || list[1].Topics == nil || list[1].Lag != 1 {
		t.Fatalf("groups: %s", body)
	}
	var d GroupDetail
	body = get(t, s, "/ui/api/group?group=g", &d)
	if src.mu.group != "g" || d.Lag != 7 || d.Members[0].ClientID != "c1" || d.Subscriptions == nil ||
		d.Queues[0].Topic != "t" || d.Queues[0].Queue != 0 || d.Queues[1].Queue != 1 || d.Queues[2].Topic != "u" {
		t.Fatalf("group: %s", body)
	}
	for _, p := range []string{"/ui/api/group", "/ui/api/group?group=", "/ui/api/group?g=x"} {
		getErr(t, s, p, http.StatusBadRequest)
	}
}
