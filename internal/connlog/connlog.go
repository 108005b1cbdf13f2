// Package connlog owns the gateway's record of each connection and reads
// it from the egress log: one line per connection HAProxy handled, Prefix
// then a JSON object (docs/gateway.md, "The record"); firewall renders
// the record's format into haproxy.cfg from the constants here.
// The name in a record is the agent's: hostile. HAProxy escapes it
// (json(ascii)), and Parse takes a record only when it is one JSON object
// with exactly the fields HAProxy writes, each valid; the rest count as
// bad records. Parse never prints; Record.Name is kept as sent.
package connlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// The record's facts that haproxy.cfg shares.
const (
	// Prefix begins each record on egress's stdout.
	Prefix = "agentbox-gateway:"
	// NameMax bytes of the name the agent sent are recorded; the record
	// holds its whole length too.
	NameMax = 255
)

// The whys of refused records, as the gateway's rules set them.
const (
	WhyName       = "name"       // the name is not allowed on the port
	WhyNoName     = "no_name"    // a ClientHello without SNI, an HTTP request without Host
	WhyProtocol   = "protocol"   // neither a ClientHello nor an HTTP request head
	WhyTimeout    = "timeout"    // no complete ClientHello or request head within the inspect delay
	WhyUnresolved = "unresolved" // the filter resolver gave no address for the name
	WhyGit        = "git"        // the git front door refused the request (Record.Git says why)
)

// Bounds of Parse.
const (
	MaxLine    = 64 << 10 // longer lines are skipped (Log.Skipped)
	MaxRecords = 100000   // records kept; further ones count in Log.NotListed (and in Destinations)
)

// Verdicts.
const (
	Allowed = "allowed" // the gateway admitted it and reached the name's address
	Refused = "refused" // the gateway refused it (Record.Reason says why)
	Failed  = "failed"  // admitted, but the name's address did not answer
)

// ReasonAllowed and ReasonUnreachable are the reasons of the allowed and
// failed records; ReasonOther a connection the gateway closed with no
// reason of its own (HAProxy's termination state says more).
const (
	ReasonAllowed     = "allowed"
	ReasonUnreachable = "unreachable"
	ReasonOther       = "other"
)

// Reasons are the reasons of records and what each means.
var Reasons = map[string]string{
	ReasonAllowed:     "allowed",
	ReasonUnreachable: "upstream unreachable: the name's address did not accept the connection",
	WhyName:           "name not allowed on this port",
	WhyNoName:         "no name: a ClientHello without SNI or an HTTP request without Host",
	WhyProtocol:       "neither a TLS ClientHello nor an HTTP request (or closed before one was complete)",
	WhyTimeout:        "no complete ClientHello or HTTP request before the gateway stopped waiting",
	WhyUnresolved:     "the name did not resolve through the filter resolver",
	WhyGit:            "refused by the git front door: not git's smart HTTP, or a push it does not allow",
	ReasonOther:       "closed by the gateway",
}

// Record is one connection the gateway handled.
type Record struct {
	Start time.Time `json:"start"`
	Port  int       `json:"port"`
	// Name is the SNI or Host the agent sent, lower-cased, as sent (its
	// first NameMax bytes: NameBytes is its length);
	// "" when it sent none. Hostile: escape it to print it.
	Name       string `json:"name"`
	NameBytes  int    `json:"name_bytes"`
	Address    string `json:"address"` // where the gateway connected; "" when it did not
	BytesUp    int64  `json:"bytes_up"`
	BytesDown  int64  `json:"bytes_down"`
	DurationMS int64  `json:"duration_ms"`
	Verdict    string `json:"verdict"`
	Reason     string `json:"reason"`
	Why        string `json:"why"`
	// Term is HAProxy's termination state (two letters).
	Term string `json:"termination_state"`
	// Git is a request of the git front door (docs/gateway.md, "Pushes
	// scoped"); nil for the other connections.
	Git *Git `json:"git,omitempty"`
	// Logged is when the record was written (the connection's end), from
	// Docker's timestamp; zero without one.
	Logged time.Time `json:"-"`
}

// Git is what the git front door judged of one request: its repository,
// service, verdict (fetch, push or refused), the reason of a refusal and
// the refs of a push, as the gateway escaped them (bytes other than
// letters, digits and ._/- as %XX). Hostile: escape it to print it.
type Git struct {
	Repo    string `json:"repo"`
	Service string `json:"service"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Refs    string `json:"refs"`
}

// Log is what Parse read.
type Log struct {
	Connections []Record `json:"connections"`
	// Destinations are the connections by name and port, all of them.
	Destinations []Destination `json:"destinations"`
	// Dropped counts the records the rate limit dropped, as the records
	// written after them carry the count.
	Dropped    int `json:"dropped_records"`
	NotListed  int `json:"not_listed"` // records beyond MaxRecords
	BadRecords int `json:"bad_records"`
	Skipped    int `json:"skipped_lines"`
}

// composePrefix is docker compose's "egress-1  | " before each line.
var composePrefix = regexp.MustCompile(`^[A-Za-z0-9._-]+ +\| `)

// Parse reads an egress log, as `docker logs --timestamps` writes it (lines
// without a timestamp are read too), and returns its records written at
// since or later (every one when since is zero; a line without a
// timestamp is dated by its connection's end then).
func Parse(r io.Reader, since time.Time) (*Log, error) {
	l := &Log{Connections: []Record{}}
	dests := newDestinations()
	br := bufio.NewReaderSize(r, MaxLine+1)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			l.Skipped++
			if err = skipLine(br); err == io.EOF {
				break
			}
		} else if len(line) > 0 {
			l.line(strings.TrimRight(string(line), "\r\n"), since, dests)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the egress log: %w", err)
		}
	}
	l.Destinations = dests.sorted()
	return l, nil
}

// skipLine reads past the rest of a line too long to keep.
func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// line reads one line of the log.
func (l *Log) line(s string, since time.Time, dests *destinations) {
	s = composePrefix.ReplaceAllString(s, "")
	at, rest := timestamp(s)
	body, ok := strings.CutPrefix(rest, Prefix+" ")
	if !ok {
		return
	}
	rec, err := parseRecord(body)
	if err != nil {
		l.BadRecords++
		return
	}
	rec.Logged = at
	end := at
	if end.IsZero() {
		end = rec.Start.Add(time.Duration(rec.DurationMS) * time.Millisecond)
	}
	if !since.IsZero() && end.Before(since) {
		return
	}
	l.Dropped += rec.dropped
	dests.add(rec)
	if len(l.Connections) >= MaxRecords {
		l.NotListed++
		return
	}
	l.Connections = append(l.Connections, rec.Record)
}

// timestamp splits Docker's RFC 3339 timestamp off a line; zero if none.
func timestamp(s string) (time.Time, string) {
	first, rest, ok := strings.Cut(s, " ")
	if !ok || len(first) < len("2006-01-02T15:04:05Z") || first[0] < '0' || first[0] > '9' {
		return time.Time{}, s
	}
	t, err := time.Parse(time.RFC3339Nano, first)
	if err != nil {
		return time.Time{}, s
	}
	return t, rest
}

// wire is a record as HAProxy writes it; every field is required.
type wire struct {
	Start     *json.Number `json:"start"`
	Port      *int         `json:"port"`
	Name      *string      `json:"name"`
	NameBytes *int         `json:"name_bytes"`
	Addr      *string      `json:"addr"`
	Up        *int64       `json:"up"`
	Down      *int64       `json:"down"`
	MS        *int64       `json:"ms"`
	Term      *string      `json:"term"`
	Why       *string      `json:"why"`
	Dropped   *int         `json:"dropped"`
	Git       *Git         `json:"git"`
}

// parsed is a record and the count of dropped records it carries.
type parsed struct {
	Record
	dropped int
}

// parseRecord reads the JSON object of one record (the text after the
// prefix and its space).
func parseRecord(body string) (parsed, error) {
	// HAProxy writes printable ASCII only: json(ascii) escapes the rest.
	for i := 0; i < len(body); i++ {
		if body[i] < 0x20 || body[i] > 0x7e {
			return parsed{}, fmt.Errorf("byte %#x in a record", body[i])
		}
	}
	var w wire
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return parsed{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return parsed{}, errors.New("text after the record")
	}
	return w.record()
}

// Beside parses r's records while another parser reads r, in one pass:
// read r through the returned reader, then call done with that reading's
// error (nil at the end), which returns what Parse read (nil when the
// reading or Parse failed).
func Beside(r io.Reader, since time.Time) (io.Reader, func(error) *Log) {
	pr, pw := io.Pipe()
	parsed := make(chan *Log, 1)
	go func() {
		l, err := Parse(pr, since)
		_, _ = io.Copy(io.Discard, pr) // whatever Parse left, so the tee never blocks
		if err != nil {
			l = nil
		}
		parsed <- l
	}()
	return io.TeeReader(r, pw), func(err error) *Log {
		pw.CloseWithError(err)
		return <-parsed
	}
}
