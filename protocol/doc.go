// Package protocol is the RocketMQ 4.x remoting protocol as Samsa speaks it:
// frames, the two header serializations, request and response codes, the
// typed custom headers and the JSON bodies the name server, the broker and
// the official clients exchange. It knows nothing of brokers or storage.
//
// # Frame
//
// Every command travels as one frame, all integers big-endian:
//
//	| field        | size | meaning                                                 |
//	|--------------|------|---------------------------------------------------------|
//	| total length | 4    | bytes after this field: 4 + header length + body length |
//	| mark         | 4    | serialize type << 24 | header length (24 bits)          |
//	| header       | n    | the command header, JSON or RocketMQ binary             |
//	| body         | rest | opaque bytes (message payload, JSON body, ...)          |
//
// The total length is checked against a limit (DefaultMaxFrame) before
// anything is allocated, and a header length that runs past the frame is an
// error: a peer can never make us allocate more than the limit.
//
// # Header serializations
//
// JSON (SerializeJSON, what the Go client sends by default) is RocketMQ's
// RemotingCommand as fastjson writes it:
//
//	{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"GO","opaque":7,
//	 "remark":"...","serializeTypeCurrentRPC":"JSON","version":317}
//
// RocketMQ binary (SerializeRocketMQ, RocketMQSerializable):
//
//	| field      | size  | meaning                                        |
//	|------------|-------|------------------------------------------------|
//	| code       | 2     | request code, or response code in a response   |
//	| language   | 1     | LanguageCode (JAVA 0 ... GO 9 ...)             |
//	| version    | 2     | MQVersion ordinal of the sender                |
//	| opaque     | 4     | request id; a response echoes it               |
//	| flag       | 4     | bit 0 response, bit 1 one-way                  |
//	| remark len | 4     | then remark bytes (UTF-8)                      |
//	| ext len    | 4     | then pairs: key len 2, key, value len 4, value |
//
// # Concurrency
//
// Everything here is a pure function or a value type: encoders append to a
// caller's buffer, decoders read from a caller's buffer or reader. A Command
// is not safe for concurrent mutation; share it read-only.
//
// # Bodies
//
// Bodies are RocketMQ's JSON. RocketMQ's fastjson writes maps keyed by
// numbers without quotes ({0:"127.0.0.1:10911"}), which is not JSON; the
// Unmarshal functions here accept both forms, and the Marshal functions emit
// standard JSON (quoted keys), which the Java and the Go clients both parse.
//
// # Text
//
// The broker port also answers a line of text (IsTextStart tells the two
// apart by the first byte): text.go has the line reader, the parser and the
// memcached-style STAT ... END writer; text_slave.go the codec of a master's
// per-slave lines (slave:<addr>:<field>, SlaveStat), which the broker writes
// and the dashboard, the CLI and the load generators read.
package protocol
