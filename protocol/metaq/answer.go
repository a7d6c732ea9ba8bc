package metaq

import "strconv"

// MetaQ's answer codes (its HttpStatus).
const (
	Success             = 200
	Moved               = 301
	BadRequest          = 400
	Unauthorized        = 401
	Forbidden           = 403
	NotFound            = 404
	InternalServerError = 500
	ServiceUnavailable  = 503
	GatewayTimeout      = 504
)

// AppendResult appends "result <code> <len(msg)> <opaque>\r\n<msg>".
func AppendResult(dst []byte, code int, msg string, opaque int32) []byte {
	dst = append(dst, "result "...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(len(msg)), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(opaque), 10)
	dst = append(dst, "\r\n"...)
	return append(dst, msg...)
}

// AppendValueHead appends "value <n> <opaque>\r\n": n bytes of message set
// follow.
func AppendValueHead(dst []byte, n int, opaque int32) []byte {
	dst = append(dst, "value "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(opaque), 10)
	return append(dst, "\r\n"...)
}

// PutResult is a put's success message: "<messageId> <partition> <offset>".
func PutResult(id int64, partition int32, offset int64) string {
	b := make([]byte, 0, 48)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, offset, 10)
	return string(b)
}
