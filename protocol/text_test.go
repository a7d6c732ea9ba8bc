package protocol

import (
	"bufio"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestIsTextStart(t *testing.T) {
	for b := 0; b < 256; b++ {
		want := (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
		if IsTextStart(byte(b)) != want {
			t.Errorf("%#x", b)
		}
	}
	// Any frame under 16 MiB starts with 0x00: never text.
	f, _ := AppendCommand(nil, NewRequest(HeartBeat, nil, nil))
	if IsTextStart(f[0]) {
		t.Fatal("a frame looks like text")
	}
}

func TestTextLines(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("STATS  topics\r\nversion\nquit\r\n" + strings.Repeat("x", 2000) + "\r\n"))
	var got []TextCommand
	for i := 0; i < 3; i++ {
		line, err := ReadTextLine(r, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ParseTextLine(line))
	}
	want := []TextCommand{{Name: TextStats, Args: []string{"topics"}}, {Name: TextVersion, Args: []string{}}, {Name: TextQuit, Args: []string{}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	if _, err := ReadTextLine(r, 0); !errors.Is(err, ErrTextLineTooLong) {
		t.Fatalf("long line: %v", err)
	}
	if c := ParseTextLine([]byte("\r\n")); c.Name != "" {
		t.Fatalf("empty line %+v", c)
	}
}

func TestStatsWriteRead(t *testing.T) {
	var b []byte
	b = AppendStat(b, "msgs in", "12")
	b = AppendStat(b, "version", "samsa 0.1\r\nEND")
	b = AppendEnd(b)
	want := "STAT msgs_in 12\r\nSTAT version samsa 0.1  END\r\nEND\r\n"
	if string(b) != want {
		t.Fatalf("%q", b)
	}
	stats, err := ReadStats(bufio.NewReader(strings.NewReader(string(b))))
	if err != nil || len(stats) != 2 || stats[1] != (Stat{"version", "samsa 0.1  END"}) {
		t.Fatalf("%+v %v", stats, err)
	}
	if string(AppendVersion(nil, "samsa-0.1")) != "VERSION samsa-0.1\r\n" || string(AppendTextError(nil, "bad\nthing")) != "ERROR bad thing\r\n" || string(AppendTextError(nil, "")) != "ERROR\r\n" {
		t.Fatal("version/error lines")
	}
	if _, err := ReadStats(bufio.NewReader(strings.NewReader("ERROR unknown command\r\n"))); err == nil {
		t.Fatal("ERROR not reported")
	}
}
