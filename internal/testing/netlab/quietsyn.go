package netlab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

// quietSYN sends a SYN from local to dst that nothing answers, so that
// connection tracking keeps the flow in state SYN_SENT (for two minutes),
// and leaves dst's port free. dst is a listener of its own whose accept
// queue is full (backlog 0, one connection waiting), which drops a SYN
// without a reset; the connecting socket is closed in SYN_SENT, which sends
// nothing, then the listener. It returns nil when the SYN left unanswered,
// or why not.
func quietSYN(local, dst netip.AddrPort) error {
	family := syscall.AF_INET6
	if dst.Addr().Is4() {
		family = syscall.AF_INET
	}
	ln, err := boundSocket(family, dst, 0)
	if err != nil {
		return fmt.Errorf("listener on %s: %w", dst, err)
	}
	defer syscall.Close(ln)
	if err := syscall.Listen(ln, 0); err != nil {
		return err
	}
	filler, err := net.DialTimeout("tcp", dst.String(), 200*time.Millisecond)
	if err != nil {
		return fmt.Errorf("filling the accept queue of %s: %w", dst, err)
	}
	defer filler.(*net.TCPConn).SetLinger(0) // a reset when closed: no TIME_WAIT
	defer filler.Close()
	if err := awaitAcceptQueue(ln, 1); err != nil {
		return err
	}
	s, err := boundSocket(family, local, syscall.SOCK_NONBLOCK)
	if err != nil {
		return fmt.Errorf("bind %s: %w", local, err)
	}
	defer syscall.Close(s)
	switch err := syscall.Connect(s, sockaddr(dst)); {
	case errors.Is(err, syscall.EINPROGRESS):
		return nil
	case err == nil:
		return errors.New("the SYN was answered")
	default:
		return err
	}
}

// boundSocket returns a TCP socket with SO_REUSEADDR bound to a.
func boundSocket(family int, a netip.AddrPort, flags int) (int, error) {
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|flags, 0)
	if err != nil {
		return -1, err
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Bind(fd, sockaddr(a)); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

func sockaddr(a netip.AddrPort) syscall.Sockaddr {
	if a.Addr().Is4() {
		return &syscall.SockaddrInet4{Addr: a.Addr().As4(), Port: int(a.Port())}
	}
	return &syscall.SockaddrInet6{Addr: a.Addr().As16(), Port: int(a.Port())}
}

// awaitAcceptQueue waits up to a second until the listener ln has n
// connections waiting (TCP_INFO's tcpi_unacked, for a listener).
func awaitAcceptQueue(ln, n int) error {
	for deadline := time.Now().Add(time.Second); ; {
		var info syscall.TCPInfo
		size := uint32(syscall.SizeofTCPInfo)
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(ln), syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			return fmt.Errorf("TCP_INFO: %w", errno)
		}
		if int(info.Unacked) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the accept queue holds %d connections after a second, want %d", info.Unacked, n)
		}
		time.Sleep(time.Millisecond)
	}
}
