// Package metaq is MetaQ's (Metamorphosis') text protocol as Samsa speaks
// it: request lines parsed into typed commands with bounds, the answers
// formatted, and MetaQ's message-set format encoded and decoded. It knows
// nothing of brokers or storage; it is safe for concurrent use (it has no
// state).
//
// # Requests
//
// One line each, words separated by single spaces, ending "\r\n" (a bare
// "\n" is accepted); a put's line is followed by its value bytes:
//
//	put <topic> <partition> <value-length> <flag> [<checksum>] [<transactionKey>] <opaque>\r\n<value>
//	get <topic> <group> <partition> <offset> <maxSize> <opaque>
//	offset <topic> <group> <partition> <offset> <opaque>
//	transaction <transactionKey> <sessionId> <type> [<timeout>] [<uniqueQualifier>] <opaque>
//	stats [<item>] [<opaque>]
//	version [<opaque>]
//	quit
//	auth <accessKey> <secretKey>           (Samsa's, for ACL)
//
// A put's checksum is CRC32(value) & 0x7FFFFFFF, or -1 for none; a
// partition of -1 asks the server to pick one. A line is at most
// MaxLine bytes, a value at most Limits.MaxValue bytes and a get's maxSize
// at most Limits.MaxGetSize: a request never makes the server allocate
// more than it sent plus a small constant (a get's answer is bounded by
// maxSize).
//
// # Answers
//
//	result <code> <length> <opaque>\r\n<message of length bytes>
//	value <length> <opaque>\r\n<message set of length bytes>
//
// with HTTP-like codes (HttpStatus): 200 success, 301 moved (the message
// is the offset to use), 400 bad request, 403 forbidden, 404 not found,
// 500 internal error, 503 unavailable, 504 timeout. A put's success
// message is "<messageId> <partition> <offset>".
//
// # Message set
//
// A get's value is messages back to back, each (big-endian):
//
//	| field     | size | meaning                                              |
//	|-----------|------|------------------------------------------------------|
//	| length    | 4    | bytes of data (attribute part included)              |
//	| checksum  | 4    | CRC32(data) & 0x7FFFFFFF: the end-to-end check       |
//	| id        | 8    | the broker's message id                              |
//	| flag      | 4    | the producer's flag; bit 0: data starts with an attribute |
//	| data      | n    | [attribute length 4 + attribute] + payload           |
//
// The last message of a set may be cut short by maxSize: a consumer
// decodes the whole messages and asks again from the first byte it could
// not use (offsets are byte positions in the partition's stream).
package metaq
