package xa

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// XID names a branch, as X/Open XA does: a format id, a global
// transaction id (1 to 64 bytes) and a branch qualifier (0 to 64 bytes).
type XID struct {
	FormatID int32
	GTRID    []byte
	BQUAL    []byte
}

// XA's size limits (MAXGTRIDSIZE, MAXBQUALSIZE).
const (
	MaxGTRID = 64
	MaxBQUAL = 64
)

// Validate reports a malformed XID.
func (x XID) Validate() error {
	if x.FormatID == -1 {
		return errors.New("xa: formatID -1 is the null XID")
	}
	if len(x.GTRID) == 0 || len(x.GTRID) > MaxGTRID {
		return fmt.Errorf("xa: global transaction id of %d bytes, want 1 to %d", len(x.GTRID), MaxGTRID)
	}
	if len(x.BQUAL) > MaxBQUAL {
		return fmt.Errorf("xa: branch qualifier of %d bytes, want at most %d", len(x.BQUAL), MaxBQUAL)
	}
	return nil
}

// String is the XID as "<formatId>.<gtrid hex>.<bqual hex>": the key of
// a branch, the value of a half's SAMSA_XID property.
func (x XID) String() string {
	return strconv.FormatInt(int64(x.FormatID), 10) + "." + hex.EncodeToString(x.GTRID) + "." + hex.EncodeToString(x.BQUAL)
}

// ParseXID reads a String.
func ParseXID(s string) (XID, error) {
	f, rest, ok1 := strings.Cut(s, ".")
	g, b, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 {
		return XID{}, fmt.Errorf("xa: XID %q: want <formatId>.<gtrid hex>.<bqual hex>", s)
	}
	fid, err := strconv.ParseInt(f, 10, 32)
	if err != nil {
		return XID{}, fmt.Errorf("xa: XID %q: format id: %w", s, err)
	}
	gt, err := hex.DecodeString(g)
	if err != nil {
		return XID{}, fmt.Errorf("xa: XID %q: global transaction id: %w", s, err)
	}
	bq, err := hex.DecodeString(b)
	if err != nil {
		return XID{}, fmt.Errorf("xa: XID %q: branch qualifier: %w", s, err)
	}
	x := XID{FormatID: int32(fid), GTRID: gt, BQUAL: bq}
	return x, x.Validate()
}

// XA return codes (X/Open XA, xa.h): the answer of each verb.
const (
	OK         = 0   // XA_OK
	RDONLY     = 3   // XA_RDONLY: the branch wrote nothing; it is forgotten
	RBROLLBACK = 100 // XA_RBROLLBACK: rolled back, for an unspecified reason
	RBTIMEOUT  = 106 // XA_RBTIMEOUT: rolled back, it lasted too long
	ErrRMERR   = -3  // XAER_RMERR: an error in the resource manager
	ErrNOTA    = -4  // XAER_NOTA: no such branch
	ErrINVAL   = -5  // XAER_INVAL: invalid arguments
	ErrPROTO   = -6  // XAER_PROTO: a verb out of order
	ErrRMFAIL  = -7  // XAER_RMFAIL: the resource manager cannot answer now; try again
	ErrDUPID   = -8  // XAER_DUPID: the XID is in use already
)

// Error is an XA verb's failure: its XA code and why.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return "xa: " + CodeName(e.Code) + ": " + e.Msg }

func xaErr(code int, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// CodeName is the code's name in xa.h.
func CodeName(code int) string {
	switch code {
	case OK:
		return "XA_OK"
	case RDONLY:
		return "XA_RDONLY"
	case RBROLLBACK:
		return "XA_RBROLLBACK"
	case RBTIMEOUT:
		return "XA_RBTIMEOUT"
	case ErrRMERR:
		return "XAER_RMERR"
	case ErrNOTA:
		return "XAER_NOTA"
	case ErrINVAL:
		return "XAER_INVAL"
	case ErrPROTO:
		return "XAER_PROTO"
	case ErrRMFAIL:
		return "XAER_RMFAIL"
	case ErrDUPID:
		return "XAER_DUPID"
	}
	return "XA(" + strconv.Itoa(code) + ")"
}
