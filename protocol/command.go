package protocol

import (
	"fmt"
	"sort"
	"strings"
)

// SerializeType says how a command's header is encoded (the top byte of a
// frame's mark field).
type SerializeType uint8

const (
	// SerializeJSON is RocketMQ's RemotingSerializable JSON header.
	SerializeJSON SerializeType = 0
	// SerializeRocketMQ is RocketMQ's compact binary header (RocketMQSerializable).
	SerializeRocketMQ SerializeType = 1
)

// JSON and RocketMQ are the short names the contract uses.
const (
	JSON     = SerializeJSON
	RocketMQ = SerializeRocketMQ
)

func (s SerializeType) String() string {
	switch s {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	}
	return fmt.Sprintf("SerializeType(%d)", uint8(s))
}

// Flag bits of Command.Flag.
const (
	// FlagResponse marks a response (RemotingCommand RPC_TYPE, bit 0).
	FlagResponse int32 = 1 << 0
	// FlagOneway marks a request that wants no response (RPC_ONEWAY, bit 1).
	FlagOneway int32 = 1 << 1
)

// Versions are MQVersion.Version ordinals as they travel in Command.Version.
const (
	// VersionV3_0_11 is the first version whose REGISTER_BROKER body is a
	// RegisterBrokerBody (older brokers sent a bare TopicConfigSerializeWrapper).
	VersionV3_0_11 int16 = 37
	// VersionV4_5_2 is what rocketmq-client-go sends (its _Version = 317).
	VersionV4_5_2 int16 = 317
	// VersionV4_9_4 and later get standard JSON (quoted map keys) from a Java
	// name server's route answers.
	VersionV4_9_4 int16 = 401
	// VersionV5_0_0 changes the compressed RegisterBrokerBody layout.
	VersionV5_0_0 int16 = 413
	// DefaultVersion is what Samsa sends: the official Go client's value.
	DefaultVersion = VersionV4_5_2
)

// LanguageGo is the language Samsa announces.
const LanguageGo = "GO"

// languages is RocketMQ's LanguageCode enum: name by code.
var languages = [...]string{
	0: "JAVA", 1: "CPP", 2: "DOTNET", 3: "PYTHON", 4: "DELPHI", 5: "ERLANG",
	6: "RUBY", 7: "OTHER", 8: "HTTP", 9: "GO", 10: "PHP", 11: "OMS", 12: "RUST",
	13: "NODE_JS",
}

// languageOther is LanguageCode.OTHER, used for names the enum lacks.
const languageOther = 7

// LanguageName gives the LanguageCode name of a binary language byte, or
// "OTHER" for a code the enum does not have.
func LanguageName(code byte) string {
	if int(code) < len(languages) {
		return languages[code]
	}
	return languages[languageOther]
}

// LanguageCode gives the binary byte of a language name (case-sensitive, as
// Java's enum); names it does not know map to OTHER (7).
func LanguageCode(name string) byte {
	switch name { // the common ones without a loop
	case "GO":
		return 9
	case "JAVA":
		return 0
	}
	for i, n := range languages {
		if n == name {
			return byte(i)
		}
	}
	return languageOther
}

// Command is one remoting command, request or response.
type Command struct {
	Code      int32             // request code, or response code in a response
	Language  string            // "GO" from us; whatever the peer sent
	Version   int16             // MQVersion ordinal; we send DefaultVersion
	Opaque    int32             // request id; a response echoes it
	Flag      int32             // FlagResponse, FlagOneway
	Remark    string            // human-readable text, mostly on errors
	ExtFields map[string]string // the custom header, flattened as RocketMQ does
	// Header, when set, is (part of) the custom header in typed form: it
	// is encoded without a map, and the fields it holds are not in
	// ExtFields (which holds only the others). Senders set it on hot
	// paths; DecodeRequestFrame sets it on a send request. Nil otherwise.
	Header    ExtHeader
	Body      []byte
	Serialize SerializeType // how the header was (or will be) encoded
}

// NewRequest makes a request with our language and version, JSON-encoded.
// Opaque is left 0: the sender assigns it from its connection's counter
// (this package keeps no global state).
func NewRequest(code int32, ext map[string]string, body []byte) *Command {
	return &Command{
		Code:      code,
		Language:  LanguageGo,
		Version:   DefaultVersion,
		ExtFields: ext,
		Body:      body,
		Serialize: SerializeJSON,
	}
}

// NewResponse makes the response to req: it echoes req's Opaque, sets the
// response flag and encodes its header the way req's was.
func NewResponse(req *Command, code int32, remark string) *Command {
	return &Command{
		Code:      code,
		Language:  LanguageGo,
		Version:   DefaultVersion,
		Opaque:    req.Opaque,
		Flag:      FlagResponse,
		Remark:    remark,
		Serialize: req.Serialize,
	}
}

// NewBodyResponse is a SUCCESS response to req whose body is v as JSON
// (MarshalBody), or SYSTEM_ERROR when v does not encode.
func NewBodyResponse(req *Command, v any) *Command {
	body, err := MarshalBody(v)
	if err != nil {
		return NewResponse(req, SystemError, err.Error())
	}
	r := NewResponse(req, Success, "")
	r.Body = body
	return r
}

// IsResponse reports whether the response flag is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the one-way flag is set.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// MarkResponse sets the response flag.
func (c *Command) MarkResponse() { c.Flag |= FlagResponse }

// MarkOneway sets the one-way flag.
func (c *Command) MarkOneway() { c.Flag |= FlagOneway }

// Ext returns an ext field (of ExtFields or Header), "" when absent.
func (c *Command) Ext(key string) string {
	if v, ok := c.ExtFields[key]; ok || c.Header == nil {
		return v
	}
	return c.Header.Encode()[key]
}

// SetExt sets an ext field, creating the map when needed.
func (c *Command) SetExt(key, value string) {
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 4)
	}
	c.ExtFields[key] = value
}

// String is a one-line summary for logs (the body as a length only).
func (c *Command) String() string {
	var b strings.Builder
	kind := "request"
	name := RequestName(c.Code)
	if c.IsResponse() {
		kind, name = "response", ResponseName(c.Code)
	}
	fmt.Fprintf(&b, "%s %s(%d) opaque=%d flag=%d lang=%s ver=%d %s", kind, name, c.Code, c.Opaque, c.Flag, c.Language, c.Version, c.Serialize)
	if c.Remark != "" {
		fmt.Fprintf(&b, " remark=%q", c.Remark)
	}
	if ext := c.extMap(); len(ext) > 0 {
		keys := make([]string, 0, len(ext))
		for k := range ext {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(" ext={")
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s=%q", k, ext[k])
		}
		b.WriteByte('}')
	}
	fmt.Fprintf(&b, " body=%dB", len(c.Body))
	return b.String()
}
