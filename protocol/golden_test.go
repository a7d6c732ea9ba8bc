package protocol

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestGoldenFrames runs testdata/frames.txt with
// github.com/cockroachdb/datadriven: cases of a directive and its input
// lines, "----", then the expected output, separated by blank lines; '#'
// lines before a directive are comments. Directives:
//
//	encode json|rocketmq   input: fields as "name: value" (code, lang,
//	                       version, opaque, flag, remark, ext.<key>, body;
//	                       values may be Go-quoted) → hex dump of the
//	                       frame, and the decoded command
//	decode                 input: hex bytes of a frame (length prefix
//	                       included) → the decoded command or the error
//
// go test ./protocol -run TestGoldenFrames -rewrite rewrites the expected
// outputs; review them as a diff.
func TestGoldenFrames(t *testing.T) {
	datadriven.RunTest(t, "testdata/frames.txt", func(t *testing.T, d *datadriven.TestData) string {
		return runGolden(d)
	})
}

func runGolden(d *datadriven.TestData) string {
	var input []string
	if d.Input != "" {
		input = strings.Split(d.Input, "\n")
	}
	switch {
	case d.Cmd == "encode" && len(d.CmdArgs) == 1 && len(d.CmdArgs[0].Vals) == 0:
		c, err := goldenCommand(d.CmdArgs[0].Key, input)
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
	case d.Cmd == "decode" && len(d.CmdArgs) == 0:
		raw, err := hex.DecodeString(strings.Join(strings.Fields(d.Input), ""))
		if err != nil {
			return "error: bad hex: " + err.Error()
		}
		c, err := ReadCommand(bytes.NewReader(raw), 0, nil)
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok: " + c.String()
	}
	return "error: unknown directive " + d.FullCmd()
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
			c.Code = int32(num(16))
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
