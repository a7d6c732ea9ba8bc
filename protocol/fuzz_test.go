package protocol

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the fuzz seeds under testdata/fuzz from seedCommands")

// seedCommands are the commands the fuzz seeds are made from.
func seedCommands() []*Command {
	return []*Command{
		sampleCommand(SerializeJSON),
		sampleCommand(SerializeRocketMQ),
		{Code: SendMessageV2, Language: "JAVA", Version: VersionV4_9_4, Opaque: 1, Flag: FlagOneway,
			ExtFields: fullHeaders()["SendMessageRequestHeaderV2"].Encode(), Body: []byte("body"), Serialize: SerializeRocketMQ},
		{Code: PullMessage, Language: "GO", Version: DefaultVersion, Opaque: 2,
			ExtFields: fullHeaders()["PullMessageRequestHeader"].Encode(), Serialize: SerializeJSON},
		{Code: Success, Flag: FlagResponse, Remark: "\u00e9\x01\"", Serialize: SerializeJSON},
	}
}

// checkIdempotent: once decoded, a command encodes and decodes to itself.
func checkIdempotent(t *testing.T, c *Command) {
	f1, err := AppendCommand(nil, c)
	if err != nil {
		return // e.g. a header too large to frame: refused, fine
	}
	c1, err := DecodeFrame(f1[4:])
	if err != nil {
		t.Fatalf("our own frame does not decode: %v\n%+v", err, c)
	}
	f2, err := AppendCommand(nil, c1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f1, f2) {
		t.Fatalf("encoding not stable:\n%q\n%q", f1, f2)
	}
	c2, _ := DecodeFrame(f2[4:])
	if !reflect.DeepEqual(c1, c2) {
		t.Fatalf("decoding not stable:\n%+v\n%+v", c1, c2)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	for _, c := range seedCommands() {
		fr, _ := AppendCommand(nil, c)
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadCommand(bytes.NewReader(data), 1<<20, nil)
		if err != nil {
			return
		}
		checkIdempotent(t, c)
	})
}

func FuzzJSONHeader(f *testing.F) {
	for _, c := range seedCommands() {
		f.Add(appendJSONHeader(nil, c))
	}
	f.Add([]byte(`{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}`))
	f.Fuzz(func(t *testing.T, h []byte) {
		c := &Command{}
		if err := DecodeHeader(SerializeJSON, h, c); err != nil {
			return
		}
		checkIdempotent(t, c)
	})
}

func FuzzBinaryHeader(f *testing.F) {
	for _, c := range seedCommands() {
		h, _ := appendBinaryHeader(nil, c)
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		c := &Command{}
		if err := DecodeHeader(SerializeRocketMQ, h, c); err != nil {
			return
		}
		checkIdempotent(t, c)
	})
}

// TestWriteFuzzSeeds keeps testdata/fuzz in step with seedCommands under
// -update (the seeds are also added in code, so the corpus is a record).
func TestWriteFuzzSeeds(t *testing.T) {
	if !*update {
		return
	}
	write := func(target string, i int, data []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range seedCommands() {
		fr, _ := AppendCommand(nil, c)
		write("FuzzDecodeFrame", i, fr)
		write("FuzzJSONHeader", i, appendJSONHeader(nil, c))
		h, _ := appendBinaryHeader(nil, c)
		write("FuzzBinaryHeader", i, h)
	}
}
