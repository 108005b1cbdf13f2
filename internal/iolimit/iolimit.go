// Package iolimit holds writers that bound what they take: a writer that
// fails past a size, and a buffer that keeps only the start.
package iolimit

import (
	"bytes"
	"errors"
	"io"
)

// Writer passes on at most left bytes and then fails.
type Writer struct {
	W    io.Writer
	Left int64
	Over bool // a write went over Left
}

func (l *Writer) Write(p []byte) (int, error) {
	if int64(len(p)) > l.Left {
		l.Over = true
		return 0, errors.New("size limit exceeded")
	}
	l.Left -= int64(len(p))
	return l.W.Write(p)
}

// Head keeps the first 64 KiB written to it.
type Head struct{ bytes.Buffer }

func (h *Head) Write(p []byte) (int, error) {
	if room := 64<<10 - h.Len(); room > 0 {
		h.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
