package firewall

import (
	"fmt"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"time"
)

// The request endpoint (docs/approvals.md): an HTTP server on the egress's
// loopback, where the agent asks for a destination with a reason and a
// wished duration, and learns the answer. It grants nothing: it writes each
// request into RequestSpool and reads the answers that the host writes
// into RequestAnswers through the entrypoint (requests, answer). It runs
// as RequestUID, its own uid (neither root nor the agent's), and listens
// below 1024, where the agent cannot bind.
const (
	RequestAddr = "127.0.0.1"
	RequestPort = 57
	RequestUID  = 5355
	// RequestSpool holds a file ID.req per request, written by the
	// endpoint: "KEY VALUE" lines (v, id, time, expires, dest, seconds,
	// reason as hex).
	RequestSpool = runDir + "/requests"
	// RequestAnswers holds a file ID per answered request, written by the
	// entrypoint's answer (root): state, until, note as hex.
	RequestAnswers = runDir + "/answers"
	// RequestMaxReason caps a request's reason, in bytes (audit.MaxReason).
	RequestMaxReason = 500
	// RequestMaxPending requests may wait at once; RequestMaxPerWindow
	// may come in RequestWindow.
	RequestMaxPending   = 5
	RequestMaxPerWindow = 10
	RequestWindow       = 10 * time.Minute
	// DefaultRequestTimeout is how long a request waits for an answer.
	DefaultRequestTimeout = 10 * time.Minute
	requestName           = "agentbox-requests" // its process's name ($0)
	requestPid            = runDir + "/requests.pid"
	// requestHosts lists the host's addresses and the gateways, one a
	// line: the entrypoint writes it once it has read them, the endpoint
	// refuses requests that cover one (the firewall refuses them before
	// any grant).
	requestHosts = runDir + "/hosts"
)

// Requests is what the request endpoint of a profile needs: how long a
// request waits, and the longest grant the profile's elevation permits.
// A profile whose elevation.allowed is false has no endpoint.
type Requests struct {
	Timeout time.Duration
	Max     time.Duration // elevation.max_duration
}

// requestsView is what templates/requests.pl.tmpl sees.
type requestsView struct {
	Prog, Name                                         string
	MaxPending, MaxPerWindow, WindowSeconds, MaxReason int
	MaxHead, MaxBody, ReadSeconds, MaxPorts            int
	Refused                                            []SpecialRange // the special ranges
}

// RequestsProgram renders the request endpoint's Perl, the same for every
// policy, as the entrypoint runs it: perl -e PROGRAM ADDR PORT SPOOL
// ANSWERS UID HOSTS, then the policy's RequestsArgs.
func RequestsProgram() ([]byte, error) {
	v := requestsView{
		Prog: path.Base(EntrypointPath), Name: requestName,
		MaxPending: RequestMaxPending, MaxPerWindow: RequestMaxPerWindow, WindowSeconds: int(RequestWindow / time.Second),
		MaxReason: RequestMaxReason, MaxHead: 4096, MaxBody: 2048, ReadSeconds: 3, MaxPorts: 16,
		Refused: SpecialRanges(),
	}
	return execute("requests.pl.tmpl", v)
}

// RequestsArgs are the request endpoint's arguments that policy p (its
// Requests set) decides, as its policy.bash holds them: the timeout and the
// longest grant in seconds, the never names space-separated, and the never
// ranges, a "PREFIX WHY" line each.
func RequestsArgs(p Policy) ([]string, error) {
	s, err := requestSettingsOf(p)
	if err != nil {
		return nil, err
	}
	return []string{strconv.FormatInt(s.timeout, 10), strconv.FormatInt(s.max, 10),
		strings.Join(p.NeverNames, " "), strings.Join(s.ranges, "\n")}, nil
}

// requestSettings are what policy p decides of its request endpoint: the
// timeout and the longest grant in seconds, and the never ranges, "PREFIX
// WHY" each.
type requestSettings struct {
	timeout, max int64
	ranges       []string
}

func requestSettingsOf(p Policy) (requestSettings, error) {
	s := requestSettings{timeout: int64(p.Requests.Timeout / time.Second), max: int64(p.Requests.Max / time.Second)}
	if s.timeout < 1 || s.max < 1 {
		return s, fmt.Errorf("the request endpoint needs a timeout and a longest grant of a second or more")
	}
	for _, f := range []family{v4, v6} {
		for _, r := range neverRanges(p.Never, f) {
			s.ranges = append(s.ranges, r.Prefix.String()+" "+r.Why)
		}
	}
	return s, nil
}

// prefixBits writes p's prefix as bits: "00001010" for 10.0.0.0/8.
func prefixBits(p netip.Prefix) string {
	var b strings.Builder
	for i, byt := range p.Addr().AsSlice() {
		for j := 0; j < 8 && i*8+j < p.Bits(); j++ {
			b.WriteByte('0' + byt>>(7-j)&1)
		}
	}
	return b.String()
}
