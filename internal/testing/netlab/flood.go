package netlab

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// flood sends Count UDP datagrams to Addr as fast as one socket can, or
// until Timeout, whichever comes first. A datagram the firewall refuses
// fails with EPERM (or ECONNREFUSED after an ICMP error), which counts as
// sent: it went through the output hook. Sent is the count, OK true when
// all of them went.
func flood(req Request) Response {
	conn, err := net.Dial("udp", req.Addr)
	if err != nil {
		return failed(err, 0)
	}
	defer conn.Close()
	start := time.Now()
	end := start.Add(req.Timeout)
	payload := []byte("netlab flood")
	sent := 0
	for ; sent < req.Count; sent++ {
		if sent%1024 == 0 && time.Now().After(end) {
			break
		}
		_, err := conn.Write(payload)
		if err != nil && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.ECONNREFUSED) {
			return Response{Err: fmt.Sprintf("datagram %d: %v", sent, err), Errno: ErrnoName(err), Sent: sent}
		}
	}
	return Response{OK: sent == req.Count, Sent: sent, Elapsed: time.Since(start)}
}
