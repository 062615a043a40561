package rpc

import (
	"bytes"
	"io"
)

// maxLine bounds what a lineWriter holds back waiting for a newline.
const maxLine = 1 << 20

// lineWriter hands a child's output stream to out one whole line per
// Write, so that lines of several streams or children sharing out never
// interleave: go-plugin writes a stderr line and its newline in two calls,
// and copies the synced stdio streams in arbitrary chunks. Each lineWriter
// is written by one goroutine.
type lineWriter struct {
	out io.Writer
	buf []byte // the incomplete last line
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for len(w.buf) > 0 {
		n := bytes.IndexByte(w.buf, '\n') + 1
		if n == 0 {
			if len(w.buf) < maxLine {
				break
			}
			n = len(w.buf)
		}
		// A failing out must not stop go-plugin's copier, which would
		// block the child on a full pipe: the line is dropped instead.
		_, _ = w.out.Write(w.buf[:n])
		w.buf = w.buf[n:]
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}
