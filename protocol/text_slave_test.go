package protocol

import (
	"bufio"
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestSlaveStatWire: the lines are the broker's `stats ha` text, byte for
// byte, and read back through ReadStats they give the slaves again, an
// IPv6 address included.
func TestSlaveStatWire(t *testing.T) {
	slaves := []SlaveStat{
		{Addr: "127.0.0.1:10912", AckOffset: 1 << 40, BehindBytes: 20, LagMs: 5, InSync: true, SinceMs: 1700000000123},
		{Addr: "[::1]:10912", AckOffset: 7},
	}
	var wire []byte
	wire = AppendStat(wire, "ha_role", "SYNC_MASTER")
	for _, s := range slaves {
		for _, st := range s.Format() {
			wire = AppendStat(wire, st.Name, st.Value)
		}
	}
	wire = AppendEnd(wire)
	const want = "STAT ha_role SYNC_MASTER\r\n" +
		"STAT slave:127.0.0.1:10912:ack_offset 1099511627776\r\n" +
		"STAT slave:127.0.0.1:10912:behind_bytes 20\r\n" +
		"STAT slave:127.0.0.1:10912:lag_ms 5\r\n" +
		"STAT slave:127.0.0.1:10912:in_sync 1\r\n" +
		"STAT slave:127.0.0.1:10912:since_ms 1700000000123\r\n" +
		"STAT slave:[::1]:10912:ack_offset 7\r\n" +
		"STAT slave:[::1]:10912:behind_bytes 0\r\n" +
		"STAT slave:[::1]:10912:lag_ms 0\r\n" +
		"STAT slave:[::1]:10912:in_sync 0\r\n" +
		"STAT slave:[::1]:10912:since_ms 0\r\n" +
		"END\r\n"
	if string(wire) != want {
		t.Fatalf("wire:\n%s\nwant:\n%s", wire, want)
	}
	stats, err := ReadStats(bufio.NewReader(bytes.NewReader(wire)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSlaveStats(stats)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, slaves) {
		t.Fatalf("parsed %+v\nwant %+v", got, slaves)
	}
}

// TestParseSlaveStatsLenient: other names are skipped, a field left out
// stays zero, a field this version does not know is skipped, and lines
// of several slaves may interleave.
func TestParseSlaveStatsLenient(t *testing.T) {
	got, err := ParseSlaveStats([]Stat{{Name: "ha_role", Value: "ASYNC_MASTER"}, {Name: "ha_slaves", Value: "0"}})
	if err != nil || got != nil {
		t.Fatalf("no slave lines: %+v, %v", got, err)
	}
	got, err = ParseSlaveStats([]Stat{
		{Name: "slave:b:1:ack_offset", Value: "10"},
		{Name: "slave:[::1]:10912:in_sync", Value: "1"},
		{Name: "slave:b:1:future_field_2", Value: "anything"},
		{Name: "slave_sync_rounds", Value: "3"},
		{Name: "slave:b:1:lag_ms", Value: "-1"},
	})
	want := []SlaveStat{{Addr: "b:1", AckOffset: 10, LagMs: -1}, {Addr: "[::1]:10912", InSync: true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v\nwant %+v", got, err, want)
	}
}

// TestParseSlaveStatsMalformed: a line that cannot be read is an error
// that names it, never a panic nor a silent zero.
func TestParseSlaveStatsMalformed(t *testing.T) {
	for _, tc := range []struct {
		stats []Stat
		want  string
	}{
		{[]Stat{{Name: "slave:", Value: "1"}}, `"slave:": want slave:<addr>:<field>`},
		{[]Stat{{Name: "slave:nofield", Value: "1"}}, `"slave:nofield": want slave:<addr>:<field>`},
		{[]Stat{{Name: "slave::ack_offset", Value: "1"}}, `"slave::ack_offset": no address`},
		{[]Stat{{Name: "slave:127.0.0.1:10912", Value: "1"}}, `"slave:127.0.0.1:10912": no field name`},
		{[]Stat{{Name: "slave:[::1]:", Value: "1"}}, `"slave:[::1]:": no field name`},
		{[]Stat{{Name: "slave:[::1]:10912:Ack_Offset", Value: "1"}}, `no field name`},
		{[]Stat{{Name: "slave:[::1]:10912:ack_offset", Value: "x"}}, `slave:[::1]:10912:ack_offset = "x": not an integer`},
		{[]Stat{{Name: "slave:[::1]:10912:behind_bytes", Value: ""}}, `behind_bytes = "": not an integer`},
		{[]Stat{{Name: "slave:[::1]:10912:lag_ms", Value: "99999999999999999999"}}, `lag_ms = "99999999999999999999": not an integer`},
		{[]Stat{{Name: "slave:[::1]:10912:since_ms", Value: "1.5"}}, `since_ms = "1.5": not an integer`},
		{[]Stat{{Name: "slave:[::1]:10912:in_sync", Value: "true"}}, `in_sync = "true": want 0 or 1`},
		{[]Stat{{Name: "slave:a:1:lag_ms", Value: "1"}, {Name: "slave:a:1:lag_ms", Value: "2"}}, `"slave:a:1:lag_ms" given twice`},
	} {
		got, err := ParseSlaveStats(tc.stats)
		if err == nil || !strings.Contains(err.Error(), tc.want) || got != nil {
			t.Errorf("%+v: got %+v, %v; want an error containing %q", tc.stats, got, err, tc.want)
		}
	}
}

// FuzzParseSlaveStats: any name and value give slaves or an error, and
// what parses formats back to lines that parse the same.
func FuzzParseSlaveStats(f *testing.F) {
	f.Add("slave:[::1]:10912:ack_offset", "5")
	f.Add("slave:127.0.0.1:10912:in_sync", "1")
	f.Add("slave::", "")
	f.Add("slave:a:since_ms", "-9223372036854775808")
	f.Fuzz(func(t *testing.T, name, value string) {
		got, err := ParseSlaveStats([]Stat{{Name: name, Value: value}})
		if err != nil {
			return
		}
		for _, s := range got {
			again, err := ParseSlaveStats(s.Format())
			if err != nil || len(again) != 1 || again[0] != s {
				t.Fatalf("%+v formats to lines that parse to %+v, %v", s, again, err)
			}
		}
	})
}
