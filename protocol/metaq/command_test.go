package metaq

import (
	"errors"
	"strings"
	"testing"
)

var testLimits = Limits{MaxValue: 4 << 20, MaxGetSize: 1 << 20}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Command
	}{
		{"put t1 0 5 0 7\r\n", Command{Kind: Put, Topic: "t1", ValueLen: 5, Opaque: 7, HasOpaque: true, Checksum: NoChecksum}},
		{"put t1 -1 5 1 12345 7\r\n", Command{Kind: Put, Topic: "t1", Partition: -1, ValueLen: 5, Flag: 1, Checksum: 12345, Opaque: 7, HasOpaque: true}},
		{"put t1 2 5 0 -1 7\n", Command{Kind: Put, Topic: "t1", Partition: 2, ValueLen: 5, Checksum: NoChecksum, Opaque: 7, HasOpaque: true}},
		{"put t1 2 5 0 TX:abc 7", Command{Kind: Put, Topic: "t1", Partition: 2, ValueLen: 5, Checksum: NoChecksum, TxKey: "TX:abc", Opaque: 7, HasOpaque: true}},
		{"put t1 2 5 0 99 TX:abc 7", Command{Kind: Put, Topic: "t1", Partition: 2, ValueLen: 5, Checksum: 99, TxKey: "TX:abc", Opaque: 7, HasOpaque: true}},
		{"get t1 g1 3 1024 65536 9\r\n", Command{Kind: Get, Topic: "t1", Group: "g1", Partition: 3, Offset: 1024, MaxSize: 65536, Opaque: 9, HasOpaque: true}},
		{"offset t1 g1 3 1024 9\r\n", Command{Kind: Offset, Topic: "t1", Group: "g1", Partition: 3, Offset: 1024, Opaque: 9, HasOpaque: true}},
		{"transaction TX:1 s1 BEGIN 30 q 5", Command{Kind: Transaction, TxKey: "TX:1", Session: "s1", TxType: "BEGIN", Timeout: 30, Qualifier: "q", Opaque: 5, HasOpaque: true}},
		{"transaction TX:1 s1 COMMIT_ONE_PHASE 5", Command{Kind: Transaction, TxKey: "TX:1", Session: "s1", TxType: "COMMIT_ONE_PHASE", Opaque: 5, HasOpaque: true}},
		{"transaction TX:1 s1 BEGIN 30 5", Command{Kind: Transaction, TxKey: "TX:1", Session: "s1", TxType: "BEGIN", Timeout: 30, Opaque: 5, HasOpaque: true}},
		{"transaction TX:1 s1 BEGIN q 5", Command{Kind: Transaction, TxKey: "TX:1", Session: "s1", TxType: "BEGIN", Qualifier: "q", Opaque: 5, HasOpaque: true}},
		{"stats", Command{Kind: Stats}},
		{"stats topics", Command{Kind: Stats, Item: "topics"}},
		{"stats topics 3", Command{Kind: Stats, Item: "topics", Opaque: 3, HasOpaque: true}},
		{"version", Command{Kind: Version}},
		{"VERSION 4", Command{Kind: Version, Opaque: 4, HasOpaque: true}},
		{"quit", Command{Kind: Quit}},
		{"auth ak sk", Command{Kind: Auth, AccessKey: "ak", SecretKey: "sk"}},
		{"bogus 1 2", Command{Kind: Unknown}},
	} {
		got, err := Parse([]byte(tc.line), testLimits)
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.line, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		line      string
		kind      Kind
		hasOpaque bool
		opaque    int32
		valueLen  int
		msg       string
	}{
		{"put t1 0 5 0", Put, false, 0, 5, "put takes"},
		{"put t1 0 x 0 7", Put, true, 7, -1, "value-length \"x\""},
		{"put t1 0 99999999 0 7", Put, true, 7, -1, "exceeds the broker's maxMessageSize"},
		{"put t1 zz 5 0 7", Put, true, 7, 5, "partition \"zz\""},
		{"put t1 -2 5 0 7", Put, true, 7, 5, "partition -2"},
		{"put t1 0 5 0 -5 7", Put, true, 7, 5, "checksum -5"},
		{"put t1 0 5 0 1 x", Put, false, 0, 5, "opaque \"x\""},
		{"get t1 g 0 0 0 3", Get, true, 3, -1, "invalid max size:0"},
		{"get t1 g 0 0 9999999 3", Get, true, 3, -1, "exceeds the broker's limit"},
		{"get t1 g 0 -1 10 3", Get, true, 3, -1, "offset -1"},
		{"get t1 g 0 10 3", Get, true, 3, -1, "get takes"},
		{"offset t1 g x 0 3", Offset, true, 3, -1, "partition \"x\""},
		{"transaction TX:1 s1 NOPE 5", Transaction, true, 5, -1, "NOPE"},
		{"stats a b c", Stats, false, 0, -1, "stats takes"},
		{"version x", Version, false, 0, -1, "opaque \"x\""},
		{"auth only", Auth, false, 0, -1, "auth takes"},
	} {
		_, err := Parse([]byte(tc.line), testLimits)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: err %v, want *Error", tc.line, err)
			continue
		}
		if e.Kind != tc.kind || e.HasOpaque != tc.hasOpaque || e.Opaque != tc.opaque || e.ValueLen != tc.valueLen || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%q: got %+v, want kind %v opaque %v/%d valueLen %d msg ~%q", tc.line, e, tc.kind, tc.hasOpaque, tc.opaque, tc.valueLen, tc.msg)
		}
	}
	if _, err := Parse([]byte(" \r\n"), testLimits); err != ErrEmpty {
		t.Errorf("blank line: %v", err)
	}
	if _, err := Parse([]byte("get "+strings.Repeat("x", MaxLine)), testLimits); err == nil {
		t.Error("long line accepted")
	}
}

func TestAnswers(t *testing.T) {
	if got := string(AppendResult(nil, Success, PutResult(42, 3, 1024), 7)); got != "result 200 9 7\r\n42 3 1024" {
		t.Errorf("result: %q", got)
	}
	if got := string(AppendResult(nil, NotFound, "", -2)); got != "result 404 0 -2\r\n" {
		t.Errorf("empty result: %q", got)
	}
	if got := string(AppendValueHead(nil, 100, 9)); got != "value 100 9\r\n" {
		t.Errorf("value: %q", got)
	}
}
