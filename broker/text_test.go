package broker

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestTextProtocol(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("tx", 1))
	c.call(sendReq("tx", 0, []byte("hello"), nil))

	nc, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(nc)
	readUntilEnd := func() map[string]string {
		stats := make(map[string]string)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("read stats: %v", err)
			}
			if !strings.HasSuffix(line, "\r\n") {
				t.Fatalf("line without CRLF: %q", line)
			}
			line = strings.TrimSuffix(line, "\r\n")
			if line == "END" {
				return stats
			}
			f := strings.SplitN(line, " ", 3)
			if len(f) != 3 || f[0] != "STAT" {
				t.Fatalf("bad stat line %q", line)
			}
			stats[f[1]] = f[2]
		}
	}
	io.WriteString(nc, "stats\r\n")
	s := readUntilEnd()
	for _, k := range []string{"uptime", "version", "curr_connections", "total_connections", "cmd_put", "cmd_get",
		"bytes_read", "bytes_written", "topic:tx:put", "topic:tx:get", "store_written_offset", "store_durable_offset", "store_flush_p99_us"} {
		if _, ok := s[k]; !ok {
			t.Errorf("stats lacks %s", k)
		}
	}
	if s["cmd_put"] != "1" || s["topic:tx:put"] != "1" || s["curr_connections"] != "2" {
		t.Errorf("stats: cmd_put %s topic put %s conns %s", s["cmd_put"], s["topic:tx:put"], s["curr_connections"])
	}
	io.WriteString(nc, "stats topics\n")
	if s := readUntilEnd(); s["topic:tx:put"] != "1" || s["uptime"] != "" {
		t.Errorf("stats topics: %v", s)
	}
	io.WriteString(nc, "version\r\n")
	if line, _ := br.ReadString('\n'); line != "VERSION "+DefaultVersion+"\r\n" {
		t.Errorf("version: %q", line)
	}
	io.WriteString(nc, "bogus\r\n")
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "ERROR") {
		t.Errorf("unknown command: %q", line)
	}
	io.WriteString(nc, "quit\r\n")
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after quit: %v, want EOF", err)
	}
}
