package netlab

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// flood sends Count UDP datagrams to Addr as fast as one socket can, or
// until Timeout, whichever comes first. The socket is not connected, so
// that no ICMP error of an earlier datagram fails the next send. A datagram
// the firewall refuses fails with EPERM, which counts as sent: it went
// through the output hook. Sent is the count, OK true when all of them
// went.
func flood(req Request) Response {
	to, err := net.ResolveUDPAddr("udp", req.Addr)
	if err != nil {
		return Response{Err: err.Error()}
	}
	conn, err := net.ListenUDP("udp", nil)
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
		_, err := conn.WriteToUDP(payload, to)
		if err != nil && !errors.Is(err, syscall.EPERM) {
			return Response{Err: fmt.Sprintf("datagram %d: %v", sent, err), Errno: ErrnoName(err), Sent: sent}
		}
	}
	return Response{OK: sent == req.Count, Sent: sent, Elapsed: time.Since(start)}
}
