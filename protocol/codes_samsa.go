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

	// XA: the broker as an XA resource manager (package broker/xa).
	// Codes 9201 to 9219 are kept for it. Every request names a branch by
	// ext fields formatId (decimal), gtrid and bqual (hex); every answer
	// carries ext field xaCode, X/Open XA's return code (0 XA_OK, 3
	// XA_RDONLY, 100-107 rolled back, negative XAER_*), with response code
	// SUCCESS when xaCode >= 0 and XA_RDONLY, else SYSTEM_ERROR and the
	// reason in the remark.

	// XAStart begins (flags 0), joins or resumes a branch (ext flags).
	XAStart RequestCode = 9201
	// XAEnd ends a branch's association (ext flags: TMSUCCESS, TMFAIL);
	// its body lists the half messages sent in the branch, one
	// "queueOffset:commitLogOffset" a line, as END_TRANSACTION's.
	XAEnd RequestCode = 9202
	// XAPrepare makes an ended branch durable.
	XAPrepare RequestCode = 9203
	// XACommit commits a prepared branch, or an ended one with ext
	// onePhase=true.
	XACommit RequestCode = 9204
	// XARollback rolls a branch back.
	XARollback RequestCode = 9205
	// XARecover lists the prepared branches: the answer's body is JSON,
	// {"branches":[{"xid":...,"formatId":...,"gtrid":hex,"bqual":hex,
	// "preparedAtMs":...,"messages":...}]}, oldest first.
	XARecover RequestCode = 9206
	// XAForget forgets a heuristically completed branch (the broker makes
	// no heuristic decisions: a known branch answers XAER_PROTO).
	XAForget RequestCode = 9207
)

// MaxCommitLogRange bounds the bytes one GetCommitLogRange asks for.
const MaxCommitLogRange = 8 << 20

// ExtClientChecksCRC is the ext field ("crcChecked" = "true") by which
// Samsa's client says, on its heartbeats and pulls, that it verifies the
// CRC of every record it receives. A broker may then send that client's
// pulls from its files without reading the records (zero-copy); a client
// that does not say so (RocketMQ's own) gets records the broker checked.
const ExtClientChecksCRC = "crcChecked"
