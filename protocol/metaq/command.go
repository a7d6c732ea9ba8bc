package metaq

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxLine bounds a request line, its terminator included.
const MaxLine = 1024

// Kind is a command's name.
type Kind uint8

// The commands.
const (
	Unknown Kind = iota
	Put
	Get
	Offset
	Transaction
	Stats
	Version
	Quit
	Auth
)

var kindNames = [...]string{"unknown", "put", "get", "offset", "transaction", "stats", "version", "quit", "auth"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// NoChecksum is a put's checksum when the client sent none (or -1).
const NoChecksum = -1

// Command is one parsed request line. Only the fields of its Kind are set.
type Command struct {
	Kind Kind
	// Opaque identifies the request; its answer carries it back.
	// HasOpaque is false for the stats/version forms without one (they
	// are answered in the memcached style: STAT lines, VERSION).
	Opaque    int32
	HasOpaque bool

	Topic     string
	Group     string // get, offset
	Partition int32  // put (-1: any), get, offset
	Offset    int64  // get, offset: a byte position in the partition
	MaxSize   int32  // get
	ValueLen  int    // put: the value bytes that follow the line
	Flag      int32  // put
	Checksum  int32  // put: NoChecksum or CRC32 & 0x7FFFFFFF
	TxKey     string // put, transaction: the transaction's key ("" none)

	// Transaction: MetaQ's session id, type (BEGIN, END, PREPARE,
	// COMMIT_ONE_PHASE, COMMIT_TWO_PHASE, ROLLBACK, RECOVER, FORGET),
	// timeout in seconds and unique qualifier.
	Session   string
	TxType    string
	Timeout   int32
	Qualifier string

	Item string // stats: the item ("" all)
	// Auth's keys.
	AccessKey, SecretKey string
}

// Limits bound what a request may make the server allocate.
type Limits struct {
	MaxValue   int   // a put's value length (the broker's maxMessageSize)
	MaxGetSize int32 // a get's maxSize
}

// Error is a request the parser refused. Opaque is set when the line's
// opaque could be read (the answer then carries it); ValueLen >= 0 when a
// put's value length was read, so the caller can skip the value and go
// on; a put whose value length is unknown leaves the stream unreadable.
type Error struct {
	Kind      Kind
	Opaque    int32
	HasOpaque bool
	ValueLen  int // -1: unknown
	Msg       string
}

func (e *Error) Error() string { return "metaq: " + e.Msg }

// ErrEmpty: a blank line.
var ErrEmpty = errors.New("metaq: blank line")

// Parse parses one request line (its terminator optional). An unknown
// command gives Kind Unknown and a nil error (the caller answers ERROR,
// as the text protocol always did).
func Parse(line []byte, lim Limits) (Command, error) {
	if len(line) > MaxLine {
		return Command{}, &Error{ValueLen: -1, Msg: fmt.Sprintf("line of %d bytes exceeds %d", len(line), MaxLine)}
	}
	line = bytes.TrimRight(line, "\r\n")
	f := strings.Fields(string(line))
	if len(f) == 0 {
		return Command{}, ErrEmpty
	}
	p := parser{f: f, e: &Error{ValueLen: -1}}
	var c Command
	switch strings.ToLower(f[0]) {
	case "put":
		c = p.put(lim)
	case "get":
		c = p.get(lim)
	case "offset":
		c = p.offset()
	case "transaction":
		c = p.transaction()
	case "stats":
		c = p.stats()
	case "version":
		c = p.version()
	case "quit":
		c = Command{Kind: Quit}
	case "auth":
		c = Command{Kind: Auth}
		if len(f) != 3 {
			return c, &Error{Kind: Auth, ValueLen: -1, Msg: "auth takes <accessKey> <secretKey>"}
		}
		c.AccessKey, c.SecretKey = f[1], f[2]
	default:
		return Command{Kind: Unknown}, nil
	}
	if p.e.Msg != "" {
		return c, p.e
	}
	return c, nil
}

// parser reads fields, keeping the first error in e.
type parser struct {
	f []string
	e *Error
}

func (p *parser) fail(format string, args ...any) {
	if p.e.Msg == "" {
		p.e.Msg = fmt.Sprintf(format, args...)
	}
}

func (p *parser) int32(i int, name string) int32 {
	v, err := strconv.ParseInt(p.f[i], 10, 32)
	if err != nil {
		p.fail("%s %q is not a 32-bit integer", name, p.f[i])
	}
	return int32(v)
}

func (p *parser) int64(i int, name string) int64 {
	v, err := strconv.ParseInt(p.f[i], 10, 64)
	if err != nil {
		p.fail("%s %q is not a 64-bit integer", name, p.f[i])
	}
	return v
}

// opaque reads the last field as the opaque.
func (p *parser) opaque(c *Command) {
	v, err := strconv.ParseInt(p.f[len(p.f)-1], 10, 32)
	if err != nil {
		p.fail("opaque %q is not a 32-bit integer", p.f[len(p.f)-1])
		return
	}
	c.Opaque, c.HasOpaque = int32(v), true
	p.e.Opaque, p.e.HasOpaque = int32(v), true
}

func (p *parser) topic(i int) string {
	t := p.f[i]
	if len(t) > 255 {
		p.fail("topic of %d bytes exceeds 255", len(t))
	}
	return t
}

func (p *parser) put(lim Limits) Command {
	c := Command{Kind: Put, Checksum: NoChecksum}
	p.e.Kind = Put
	n := len(p.f)
	if n < 6 || n > 8 {
		if n >= 4 {
			if v, err := strconv.Atoi(p.f[3]); err == nil && v >= 0 && v <= lim.MaxValue {
				p.e.ValueLen = v
			}
		}
		if n >= 6 {
			p.opaque(&c)
		}
		p.fail("put takes <topic> <partition> <value-length> <flag> [<checksum>] [<transactionKey>] <opaque>")
		return c
	}
	p.opaque(&c)
	v, err := strconv.Atoi(p.f[3])
	switch {
	case err != nil || v < 0:
		p.fail("value-length %q is not a length", p.f[3])
	case v > lim.MaxValue:
		p.fail("value-length %d exceeds the broker's maxMessageSize %d", v, lim.MaxValue)
	default:
		c.ValueLen = v
		p.e.ValueLen = v
	}
	c.Topic = p.topic(1)
	c.Partition = p.int32(2, "partition")
	c.Flag = p.int32(4, "flag")
	switch n {
	case 7:
		// MetaQ tells the checksum from a transaction key by its first
		// character: a digit or '-'.
		if s := p.f[5]; s[0] == '-' || s[0] >= '0' && s[0] <= '9' {
			c.Checksum = p.int32(5, "checksum")
		} else {
			c.TxKey = s
		}
	case 8:
		c.Checksum = p.int32(5, "checksum")
		c.TxKey = p.f[6]
	}
	if c.Checksum < 0 && c.Checksum != NoChecksum {
		p.fail("checksum %d is neither -1 nor a CRC32 & 0x7FFFFFFF", c.Checksum)
	}
	if c.Partition < -1 {
		p.fail("partition %d is negative", c.Partition)
	}
	return c
}

func (p *parser) get(lim Limits) Command {
	c := Command{Kind: Get}
	p.e.Kind = Get
	if len(p.f) != 7 {
		if len(p.f) > 1 {
			p.opaque(&c)
		}
		p.fail("get takes <topic> <group> <partition> <offset> <maxSize> <opaque>")
		return c
	}
	p.opaque(&c)
	c.Topic, c.Group = p.topic(1), p.f[2]
	c.Partition = p.int32(3, "partition")
	c.Offset = p.int64(4, "offset")
	c.MaxSize = p.int32(5, "maxSize")
	switch {
	case c.Partition < 0:
		p.fail("partition %d is negative", c.Partition)
	case c.Offset < 0:
		p.fail("offset %d is negative", c.Offset)
	case c.MaxSize <= 0:
		p.fail("Bad request,invalid max size:%d", c.MaxSize)
	case c.MaxSize > lim.MaxGetSize:
		p.fail("maxSize %d exceeds the broker's limit %d", c.MaxSize, lim.MaxGetSize)
	}
	return c
}

func (p *parser) offset() Command {
	c := Command{Kind: Offset}
	p.e.Kind = Offset
	if len(p.f) != 6 {
		if len(p.f) > 1 {
			p.opaque(&c)
		}
		p.fail("offset takes <topic> <group> <partition> <offset> <opaque>")
		return c
	}
	p.opaque(&c)
	c.Topic, c.Group = p.topic(1), p.f[2]
	c.Partition = p.int32(3, "partition")
	c.Offset = p.int64(4, "offset")
	if c.Partition < 0 {
		p.fail("partition %d is negative", c.Partition)
	}
	return c
}

func (p *parser) transaction() Command {
	c := Command{Kind: Transaction}
	p.e.Kind = Transaction
	n := len(p.f)
	if n < 5 || n > 7 {
		if n > 1 {
			p.opaque(&c)
		}
		p.fail("transaction takes <transactionKey> <sessionId> <type> [<timeout>] [<uniqueQualifier>] <opaque>")
		return c
	}
	p.opaque(&c)
	c.TxKey, c.Session, c.TxType = p.f[1], p.f[2], p.f[3]
	switch n {
	case 7:
		c.Timeout = p.int32(4, "timeout")
		c.Qualifier = p.f[5]
	case 6:
		// MetaQ: a numeric fifth word is the timeout, else the qualifier.
		if _, err := strconv.ParseInt(p.f[4], 10, 32); err == nil {
			c.Timeout = p.int32(4, "timeout")
		} else {
			c.Qualifier = p.f[4]
		}
	}
	switch c.TxType {
	case "BEGIN", "END", "PREPARE", "COMMIT_ONE_PHASE", "COMMIT_TWO_PHASE", "ROLLBACK", "RECOVER", "FORGET":
	default:
		p.fail("transaction type %q is not one of MetaQ's", c.TxType)
	}
	return c
}

// stats: "stats", "stats <item>" (memcached style) or "stats <item>
// <opaque>" (MetaQ's).
func (p *parser) stats() Command {
	c := Command{Kind: Stats}
	p.e.Kind = Stats
	switch len(p.f) {
	case 1:
	case 2:
		c.Item = strings.ToLower(p.f[1])
	case 3:
		c.Item = strings.ToLower(p.f[1])
		p.opaque(&c)
	default:
		p.fail("stats takes [<item>] [<opaque>]")
	}
	return c
}

// version: "version" or "version <opaque>" (MetaQ's heartbeat).
func (p *parser) version() Command {
	c := Command{Kind: Version}
	p.e.Kind = Version
	switch len(p.f) {
	case 1:
	case 2:
		p.opaque(&c)
	default:
		p.fail("version takes [<opaque>]")
	}
	return c
}
