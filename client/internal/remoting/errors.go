package remoting

import (
	"context"
	"errors"
)

// Errors, matchable with errors.Is.
var (
	// ErrTimeout: no response before the deadline. Errors carrying it
	// also match context.DeadlineExceeded.
	ErrTimeout = errors.New("client: request timed out")
	// ErrConnection: dialing failed, or the connection broke before the
	// response came (the request may have been applied).
	ErrConnection = errors.New("client: connection failed")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client: closed")
)

// timeoutError carries ErrTimeout and context.DeadlineExceeded.
type timeoutError struct{ what string }

func (e *timeoutError) Error() string { return e.what + ": " + ErrTimeout.Error() }

func (e *timeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// ctxError turns a context's end into this package's error.
func ctxError(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &timeoutError{what}
	}
	return ctx.Err()
}
