// Package metaq answers MetaQ's text protocol (package protocol/metaq) from
// Samsa's store: put appends to a queue, get reads a queue as MetaQ's
// message set, offset corrects a consumer's offset. The broker owns the
// connection (reading lines, ACL, writing answers); a Server takes only
// what it needs (Deps) and is safe for concurrent use by many connections.
//
// # Offsets
//
// MetaQ's offsets are byte positions in a partition's message stream: a
// consumer advances its offset by the bytes of the whole messages it
// decoded, and a get may end inside a message. Samsa's queues count
// messages, so each queue gets a virtual byte stream in which every
// message occupies exactly the length of its message-set encoding
// (protocol/metaq.EncodedLen: 20 + data). The n-th message of a queue
// starts where the one before it ends; an unmodified MetaQ consumer's
// arithmetic lands on message starts.
//
// The map from positions to queue offsets is kept in memory per queue
// (8 bytes a message), built on a queue's first use by reading it from its
// first retained message, and extended as messages arrive. To keep
// positions stable across restarts and retention, every message stored by
// a text put carries its position in the property METAQ_POS; a rebuild
// anchors the stream at the first retained message that carries one (a
// queue that never saw a text put starts at 0 from its first retained
// message, so retention there moves positions: a consumer is answered 301
// with the first valid position, as MetaQ answers an offset it no longer
// holds).
//
// A position past the end is answered 301 with the end; before the first
// retained message, 301 with its start; inside a message, 301 with that
// message's start (a consumer re-reads it rather than skip it).
//
// # Messages
//
// A put's flag is the record's flag; its attribute (flag bit 0: the value
// starts with a 4-byte length and the attribute) rides in the property
// METAQ_ATTR and the payload is the record's body, so a RocketMQ consumer
// sees the payload, and a get rebuilds MetaQ's bytes exactly. A message
// stored by the remoting protocol reads as its body with its flag (bit 0
// cleared, no attribute). A message's id is its CommitLog offset.
package metaq
