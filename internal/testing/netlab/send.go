package netlab

import (
	"bytes"
	"time"
)

// send dials Addr over TCP, writes each of Chunks in turn with Pause
// between them (Go's sockets set TCP_NODELAY, so each chunk leaves as its
// own segment), then reads until the end of the stream, an error, Timeout,
// or until what it read contains Line. Data is what it read; OK means the
// connection was made and something was read.
func send(req Request) Response {
	d, err := dialer(req, "tcp")
	if err != nil {
		return Response{Err: err.Error()}
	}
	start := time.Now()
	c, err := d.Dial("tcp", req.Addr)
	if err != nil {
		return failed(err, time.Since(start))
	}
	defer c.Close()
	for i, chunk := range req.Chunks {
		if i > 0 && req.Pause > 0 {
			time.Sleep(req.Pause)
		}
		if _, err := c.Write(chunk); err != nil {
			return failed(err, time.Since(start))
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(req.Timeout))
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if req.Line != "" && bytes.Contains(got, []byte(req.Line)) {
			return Response{OK: true, Elapsed: time.Since(start), Data: string(got)}
		}
		if err != nil {
			r := failed(err, time.Since(start))
			r.Data, r.OK = string(got), len(got) > 0
			return r
		}
	}
}
