package protocol

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files and fuzz seeds from the current code")

// TestGoldenFrames runs testdata/frames.txt: blocks of a directive and its
// arguments, "----", then the expected output; blocks are separated by
// blank lines and '#' lines are comments. Directives:
//
//	encode json|rocketmq   fields as "name: value" (code, lang, version,
//	                       opaque, flag, remark, ext.<key>, body; values may
//	                       be Go-quoted) → hex dump of the frame, and the
//	                       decoded command
//	decode                 hex bytes of a frame (length prefix included)
//	                       → the decoded command or the error
//
// go test -run TestGoldenFrames -update rewrites the expected outputs.
func TestGoldenFrames(t *testing.T) {
	path := filepath.Join("testdata", "frames.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := splitBlocks(string(data))
	var out strings.Builder
	for i, b := range blocks {
		got := runGolden(t, b.input)
		if !*update && got != b.expected {
			t.Errorf("%s block %d (%s):\n--- got\n%s\n--- want\n%s", path, i+1, b.input[0], got, b.expected)
		}
		if i > 0 {
			out.WriteString("\n")
		}
		for _, c := range b.comments {
			out.WriteString(c + "\n")
		}
		out.WriteString(strings.Join(b.input, "\n") + "\n----\n" + got + "\n")
	}
	if *update {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type goldenBlock struct {
	comments []string
	input    []string
	expected string
}

func splitBlocks(s string) []goldenBlock {
	var blocks []goldenBlock
	var cur *goldenBlock
	inOutput := false
	var outLines []string
	flush := func() {
		if cur != nil {
			cur.expected = strings.Join(outLines, "\n")
			blocks = append(blocks, *cur)
		}
		cur, inOutput, outLines = nil, false, nil
	}
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case inOutput:
			outLines = append(outLines, line)
		case cur == nil && strings.HasPrefix(line, "#"):
			cur = &goldenBlock{comments: []string{line}}
		case cur != nil && len(cur.input) == 0 && strings.HasPrefix(line, "#"):
			cur.comments = append(cur.comments, line)
		case line == "----":
			inOutput = true
		default:
			if cur == nil {
				cur = &goldenBlock{}
			}
			cur.input = append(cur.input, line)
		}
	}
	flush()
	return blocks
}

func runGolden(t *testing.T, input []string) string {
	if len(input) == 0 {
		return "error: empty block"
	}
	dir := strings.Fields(input[0])
	switch {
	case len(dir) == 2 && dir[0] == "encode":
		c, err := goldenCommand(dir[1], input[1:])
		if err != nil {
			return "error: " + err.Error()
		}
		frame, err := AppendCommand(nil, c)
		if err != nil {
			return "error: " + err.Error()
		}
		back, err := DecodeFrame(frame[4:])
		if err != nil {
			return "error: decoding our own frame: " + err.Error()
		}
		return strings.TrimRight(hex.Dump(frame), "\n") + "\ndecoded: " + back.String()
	case len(dir) == 1 && dir[0] == "decode":
		raw, err := hex.DecodeString(strings.Join(strings.Fields(strings.Join(input[1:], " ")), ""))
		if err != nil {
			return "error: bad hex: " + err.Error()
		}
		c, err := ReadCommand(bytes.NewReader(raw), 0, nil)
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok: " + c.String()
	}
	return "error: unknown directive " + input[0]
}

func goldenCommand(st string, fields []string) (*Command, error) {
	c := &Command{Language: LanguageGo, Version: DefaultVersion}
	switch st {
	case "json":
		c.Serialize = SerializeJSON
	case "rocketmq":
		c.Serialize = SerializeRocketMQ
	default:
		return nil, fmt.Errorf("unknown serialization %q", st)
	}
	for _, f := range fields {
		name, value, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("field %q: want name: value", f)
		}
		value = strings.TrimSpace(value)
		if strings.HasPrefix(value, `"`) {
			v, err := strconv.Unquote(value)
			if err != nil {
				return nil, fmt.Errorf("field %q: %v", f, err)
			}
			value = v
		}
		num := func(bits int) int64 {
			n, _ := strconv.ParseInt(value, 10, bits)
			return n
		}
		switch name = strings.TrimSpace(name); {
		case name == "code":
			c.Code = int16(num(16))
		case name == "lang":
			c.Language = value
		case name == "version":
			c.Version = int16(num(16))
		case name == "opaque":
			c.Opaque = int32(num(32))
		case name == "flag":
			c.Flag = int32(num(32))
		case name == "remark":
			c.Remark = value
		case name == "body":
			c.Body = []byte(value)
		case strings.HasPrefix(name, "ext."):
			c.SetExt(name[4:], value)
		default:
			return nil, fmt.Errorf("unknown field %q", name)
		}
	}
	return c, nil
}
