package bench

import (
	"fmt"
	"io"
)

// printer writes formatted lines to w and keeps the first write error;
// after one, it writes nothing more. A report function prints through it
// and returns err, so a failed write (a full disk under a redirect, a
// closed pipe) is reported once instead of being dropped at each line.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
