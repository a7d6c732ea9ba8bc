package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// The text protocol shares the broker port with remoting frames: a frame's
// first byte is the high byte of its length (0 for any frame under 16 MiB),
// a text command's first byte is a letter. Lines end with \r\n (a bare \n is
// accepted); answers are memcached-style:
//
//	stats\r\n          → STAT name value\r\n ... END\r\n
//	stats <item>\r\n   → the same, for one group of figures
//	version\r\n        → VERSION samsa-x.y.z\r\n
//	quit\r\n           → the server closes the connection
//	anything else      → ERROR unknown command\r\n

// MaxTextLine bounds a text command line.
const MaxTextLine = 1024

// ErrTextLineTooLong: a text line exceeds the limit.
var ErrTextLineTooLong = errors.New("protocol: text line too long")

// Text command names.
const (
	TextStats   = "stats"
	TextVersion = "version"
	TextQuit    = "quit"
)

// IsTextStart reports whether b can start a text command (an ASCII letter)
// rather than a frame.
func IsTextStart(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }

// TextCommand is one parsed text line.
type TextCommand struct {
	Name string   // lower-cased first word
	Args []string // the other words
}

// ParseTextLine splits one line (its \r\n optional) into a command.
func ParseTextLine(line []byte) TextCommand {
	line = bytes.TrimRight(line, "\r\n")
	f := strings.Fields(string(line))
	if len(f) == 0 {
		return TextCommand{}
	}
	return TextCommand{Name: strings.ToLower(f[0]), Args: f[1:]}
}

// ReadTextLine reads one line of at most max bytes (MaxTextLine when <= 0),
// its terminator included in the result.
func ReadTextLine(r *bufio.Reader, max int) ([]byte, error) {
	if max <= 0 {
		max = MaxTextLine
	}
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > max {
			return nil, fmt.Errorf("%w: over %d bytes", ErrTextLineTooLong, max)
		}
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// AppendStat appends "STAT name value\r\n". Spaces and line breaks in name
// become '_' and line breaks in value become ' ', so a line stays a line.
func AppendStat(dst []byte, name, value string) []byte {
	dst = append(dst, "STAT "...)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == ' ' || c == '\r' || c == '\n' || c == '\t' {
			c = '_'
		}
		dst = append(dst, c)
	}
	dst = append(dst, ' ')
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return append(dst, '\r', '\n')
}

// AppendEnd appends "END\r\n", the end of a stats answer.
func AppendEnd(dst []byte) []byte { return append(dst, "END\r\n"...) }

// AppendVersion appends "VERSION v\r\n".
func AppendVersion(dst []byte, v string) []byte {
	return append(append(append(dst, "VERSION "...), v...), '\r', '\n')
}

// AppendTextError appends "ERROR msg\r\n" (plain "ERROR\r\n" when msg is "").
func AppendTextError(dst []byte, msg string) []byte {
	dst = append(dst, "ERROR"...)
	if msg != "" {
		dst = append(append(dst, ' '), strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)...)
	}
	return append(dst, '\r', '\n')
}

// Stat is one "STAT name value" line.
type Stat struct{ Name, Value string }

// ReadStats reads STAT lines up to END (for clients and tests). An ERROR
// line becomes an error.
func ReadStats(r *bufio.Reader) ([]Stat, error) {
	var out []Stat
	for {
		line, err := ReadTextLine(r, 64<<10)
		if err != nil {
			return out, err
		}
		s := string(bytes.TrimRight(line, "\r\n"))
		switch {
		case s == "END":
			return out, nil
		case strings.HasPrefix(s, "STAT "):
			name, value, _ := strings.Cut(s[5:], " ")
			out = append(out, Stat{Name: name, Value: value})
		case strings.HasPrefix(s, "ERROR"):
			return out, fmt.Errorf("protocol: server said %q", s)
		default:
			return out, fmt.Errorf("protocol: unexpected stats line %q", s)
		}
	}
}
