package protocol

// Samsa's own request codes, above every code RocketMQ 4.x gives (its
// highest is in the 3000s; 5.x's POP family lies beyond int16).
const (
	// GetCommitLogRange asks a broker for its CommitLog's whole records
	// from ext field "from" (a record boundary) up to "to" (at most
	// MaxCommitLogRange bytes), as they lie, in the answer's body: how a
	// replica fetches a healthy copy of a range damaged in its own log
	// (package broker/repair). Admin only.
	GetCommitLogRange RequestCode = 9101
)

// MaxCommitLogRange bounds the bytes one GetCommitLogRange asks for.
const MaxCommitLogRange = 8 << 20

// ExtClientChecksCRC is the ext field ("crcChecked" = "true") by which
// Samsa's client says, on its heartbeats and pulls, that it verifies the
// CRC of every record it receives. A broker may then send that client's
// pulls from its files without reading the records (zero-copy); a client
// that does not say so (RocketMQ's own) gets records the broker checked.
const ExtClientChecksCRC = "crcChecked"
