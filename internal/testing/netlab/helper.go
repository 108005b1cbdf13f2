package netlab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// helperEnv names the role of a helper process: "server" or "agent".
const helperEnv = "AGENTBOX_NETLAB_HELPER"

// HelperMain runs the helper role this process was started for, then exits.
// In a normal test run it returns at once. Call it first thing in the test
// that New names:
//
//	func TestLabHelper(t *testing.T) { netlab.HelperMain() }
func HelperMain() {
	role := os.Getenv(helperEnv)
	if role == "" {
		return
	}
	var err error
	switch role {
	case "server":
		err = loop(os.Stdin, os.Stdout, newServer().handle)
	case "agent":
		err = loop(os.Stdin, os.Stdout, newAgent().handle)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "netlab %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// loop answers one request per line until stdin ends.
func loop(in io.Reader, out io.Writer, handle func(Request) Response) error {
	dec := json.NewDecoder(bufio.NewReader(in))
	enc := json.NewEncoder(out)
	for {
		var req Request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := enc.Encode(handle(req)); err != nil {
			return err
		}
	}
}

// Request is an order to a helper. Which fields count depends on Op.
//
// Both roles answer "ping" (the agent with its uid in Data).
//
// Agent ops: "dns" (Name, Type, Addr of the server, Net udp or tcp), "dial"
// (TCP to Addr; Data is the server's banner), "open", "echo" and "close" (a
// TCP connection kept under ID; echo sends Line and expects it back), "http"
// (GET URL, names resolved through the DNS server Resolver), "udp" (send
// Line to Addr, wait for an answer), "icmp" (ICMP echo to the address Addr
// through a datagram socket), "raw" (open a raw socket of family Name:
// inet, inet6 or packet), "exec" (Argv), "bulk" (receive Bytes from Addr),
// "dnsbench" (Count queries for Name, "%d" replaced by the query's number),
// "dnspipe" (Queries, written at once on one TCP connection to Addr, as
// RFC 7766 lets a client; Replies holds the answers in the same order).
// "dns" queries each go from a new socket, and so a new source port; so do
// dnsbench's with NewSocket. Local binds the source address and port.
// "spoof" sends from Local (any address and port the agent can bind) one
// small packet to each of Ports on the host Addr, over Net udp or tcp; a UDP
// socket stays open under ID and answers DNS queries from Records until
// "spoofed" returns them as Events. "send" writes Chunks to Addr (TCP), Pause
// between them, and reads until Line, the end or Timeout (Data). "dial" and
// "open" with Routing send through an IPv6 routing header. Timeout bounds each attempt (default 2 s).
//
// Server ops: "start" (Server), "events" (what the servers saw, from
// number Since on).
type Request struct {
	Op        string        `json:"op"`
	Addr      string        `json:"addr,omitempty"`
	Local     string        `json:"local,omitempty"` // dns, dial, udp: the source address (host:port) to bind
	Net       string        `json:"net,omitempty"`
	Name      string        `json:"name,omitempty"`
	Type      string        `json:"type,omitempty"`
	Timeout   time.Duration `json:"timeout,omitempty"`
	Bytes     int64         `json:"bytes,omitempty"`
	Count     int           `json:"count,omitempty"`
	Retries   int           `json:"retries,omitempty"`   // dns, dnsbench: new tries after a timeout, each from a new socket
	NewSocket bool          `json:"newSocket,omitempty"` // dnsbench: a new socket (source port) for every query
	Argv      []string      `json:"argv,omitempty"`
	Line      string        `json:"line,omitempty"`
	ID        string        `json:"id,omitempty"`
	URL       string        `json:"url,omitempty"`
	Resolver  string        `json:"resolver,omitempty"`
	Since     int           `json:"since,omitempty"`
	Server    *ServerConfig `json:"server,omitempty"`
	Ports     string        `json:"ports,omitempty"`   // spoof: "FIRST-LAST"
	Records   []Record      `json:"records,omitempty"` // spoof: the answers to queries that reach the socket
	Routing   *Routing      `json:"routing,omitempty"` // dial, open: an IPv6 routing header
	Queries   []DNSQuery    `json:"queries,omitempty"` // dnspipe
	Chunks    [][]byte      `json:"chunks,omitempty"`  // send: written in turn; bulk, dial, open: written first
	Pause     time.Duration `json:"pause,omitempty"`   // send: between the chunks
}

// DNSQuery is one query of a "dnspipe".
type DNSQuery struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// DNSReply is the answer to one query of a "dnspipe"; Err says why there is
// none.
type DNSReply struct {
	Rcode     string   `json:"rcode,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
	Answers   []string `json:"answers,omitempty"`
	Err       string   `json:"err,omitempty"`
}

// Routing is an IPv6 routing header that a socket sets (IPV6_RTHDR, which
// needs no privilege): the packet goes to Hops in turn, then to the address
// the socket connects to. Type 4 is segment routing (RFC 8754), type 0 the
// deprecated source route (RFC 5095).
type Routing struct {
	Type int      `json:"type"`
	Hops []string `json:"hops"`
}

// Response is what a helper reports. OK means the attempt succeeded; when it
// did not, Err says why and Errno names the error number (ECONNREFUSED,
// EPERM, ...) or "timeout".
type Response struct {
	OK      bool            `json:"ok"`
	Err     string          `json:"err,omitempty"`
	Errno   string          `json:"errno,omitempty"`
	Elapsed time.Duration   `json:"elapsed,omitempty"`
	Rcode   string          `json:"rcode,omitempty"`
	TC      bool            `json:"tc,omitempty"` // dns: the answer is truncated
	Answers []string        `json:"answers,omitempty"`
	Data    string          `json:"data,omitempty"`
	Status  int             `json:"status,omitempty"`
	Exit    int             `json:"exit,omitempty"`
	Tries   int             `json:"tries,omitempty"` // dns: the tries made
	Lost    int             `json:"lost,omitempty"`  // dnsbench: the queries that timed out and were retried
	Sent    int             `json:"sent,omitempty"`  // flood: the datagrams that went through the output hook
	Samples []time.Duration `json:"samples,omitempty"`
	Events  []Event         `json:"events,omitempty"`
	Replies []DNSReply      `json:"replies,omitempty"` // dnspipe
}

func (r Response) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Helper is a running helper process.
type Helper struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	dec    *json.Decoder
	stderr *Log
	done   chan struct{}

	mu     sync.Mutex
	broken error
}

// StartHelper starts the test binary as a helper in namespace ns: a server
// as root, an agent as uid (and gid) uid without any capability, or as root
// when uid is 0.
func (l *Lab) StartHelper(ns, role string, uid int) (*Helper, error) {
	argv := []string{"ip", "netns", "exec", ns}
	if uid != 0 {
		id := strconv.Itoa(uid)
		argv = append(argv, "setpriv", "--reuid="+id, "--regid="+id, "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--")
	}
	argv = append(argv, l.bin, "-test.run=^"+l.helperTest+"$", "-test.count=1")
	cmd := exec.Command(argv[0], argv[1:]...)
	// Under -race a process sleeps a second before it exits, unless told.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), helperEnv+"="+role, "GORACE="+gorace)
	cmd.Dir = l.dir
	h := &Helper{name: fmt.Sprintf("%s helper (uid %d) in %s", role, uid, ns), cmd: cmd, stderr: &Log{}, done: make(chan struct{})}
	cmd.Stderr = h.stderr
	var err error
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	h.dec = json.NewDecoder(bufio.NewReader(stdout))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", h.name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(h.done)
	}()
	l.addCloser(h.Close)
	// The first answer shows that the helper runs and reads requests.
	if _, err := h.Call(Request{Op: "ping"}); err != nil {
		return nil, err
	}
	return h, nil
}

// Call sends a request and returns the answer. It fails when the helper
// does not answer within the request's timeout plus ten seconds, and kills
// the helper then.
func (h *Helper) Call(req Request) (Response, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.broken != nil {
		return Response{}, h.broken
	}
	type result struct {
		resp Response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		if r.err = json.NewEncoder(h.stdin).Encode(req); r.err == nil {
			r.err = h.dec.Decode(&r.resp)
		}
		ch <- r
	}()
	timer := time.NewTimer(req.Timeout + 10*time.Second)
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			h.broken = fmt.Errorf("%s: %s: %w; its stderr:\n%s", h.name, req.Op, r.err, h.stderr.String())
			return Response{}, h.broken
		}
		return r.resp, nil
	case <-timer.C:
		_ = h.cmd.Process.Kill()
		h.broken = fmt.Errorf("%s: no answer to %q within %v; killed; its stderr:\n%s", h.name, req.Op, req.Timeout+10*time.Second, h.stderr.String())
		return Response{}, h.broken
	}
}

// Pid is the helper's process id: the test binary's, which ip netns exec
// and setpriv exec.
func (h *Helper) Pid() int { return h.cmd.Process.Pid }

// Stderr returns what the helper wrote on stderr so far.
func (h *Helper) Stderr() string { return h.stderr.String() }

// Close ends the helper: it exits when its stdin closes; after a second it
// is killed.
func (h *Helper) Close() {
	_ = h.stdin.Close()
	select {
	case <-h.done:
	case <-time.After(time.Second):
		_ = h.cmd.Process.Kill()
		<-h.done
	}
}
