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
