package connlog

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// none is what HAProxy writes for an empty or missing value.
const none = "-"

// record checks w and converts it.
func (w wire) record() (parsed, error) {
	if w.Start == nil || w.Port == nil || w.Name == nil || w.NameBytes == nil || w.Addr == nil ||
		w.Up == nil || w.Down == nil || w.MS == nil || w.Term == nil || w.Why == nil || w.Dropped == nil {
		return parsed{}, errors.New("a field is missing")
	}
	start, err := unixTime(string(*w.Start))
	if err != nil {
		return parsed{}, err
	}
	if *w.Port < 1 || *w.Port > 65535 || *w.Up < 0 || *w.Down < 0 || *w.MS < 0 || *w.Dropped < 0 {
		return parsed{}, errors.New("a number out of range")
	}
	name, err := nameOf(*w.Name, *w.NameBytes)
	if err != nil {
		return parsed{}, err
	}
	r := parsed{Record: Record{Start: start, Port: *w.Port, Name: name, NameBytes: *w.NameBytes,
		BytesUp: *w.Up, BytesDown: *w.Down, DurationMS: *w.MS, Term: *w.Term}, dropped: *w.Dropped}
	if *w.Addr != none {
		a, err := netip.ParseAddr(*w.Addr)
		if err != nil || a.Zone() != "" {
			return parsed{}, fmt.Errorf("address %q", *w.Addr)
		}
		r.Address = a.String()
	}
	r.Git = w.Git
	if err := r.judge(*w.Why); err != nil {
		return parsed{}, err
	}
	return r, nil
}

// unixTime reads HAProxy's %Ts.%ms: Unix seconds, a dot, 3 digits.
func unixTime(s string) (time.Time, error) {
	secs, ms, ok := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if !ok || err != nil || sec < 0 || sec > 1<<40 || len(ms) != 3 {
		return time.Time{}, fmt.Errorf("start %q", s)
	}
	m, err := strconv.Atoi(ms)
	if err != nil || ms[0] == '+' || ms[0] == '-' {
		return time.Time{}, fmt.Errorf("start %q", s)
	}
	return time.Unix(sec, int64(m)*1e6).UTC(), nil
}

// nameOf returns the bytes the agent sent from the name as the record
// holds it: each rune one byte (json(ascii) writes every byte above 0x7e
// as \u00XX), the first GatewayLogNameMax of n.
func nameOf(s string, n int) (string, error) {
	if n < 0 {
		return "", errors.New("a negative name length")
	}
	if n == 0 {
		if s != none {
			return "", errors.New("a name of no length")
		}
		return "", nil
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff || r == utf8.RuneError {
			return "", fmt.Errorf("name rune %U", r)
		}
		b = append(b, byte(r))
	}
	if len(b) != min(n, NameMax) {
		return "", fmt.Errorf("a name of %d bytes for %d", len(b), n)
	}
	return string(b), nil
}

// judge sets the verdict and reason from HAProxy's why and termination
// state.
func (r *parsed) judge(why string) error {
	if len(r.Term) != 2 || strings.Trim(r.Term, "-CDIKLPQRSTUcdhlrs") != "" {
		return fmt.Errorf("termination state %q", r.Term)
	}
	switch {
	case why != none:
		if _, ok := Reasons[why]; !ok || why == ReasonAllowed || why == ReasonUnreachable || why == ReasonOther {
			return fmt.Errorf("why %q", why)
		}
		r.Verdict, r.Reason = Refused, why
	case (r.Term[0] == 'S' || r.Term[0] == 's') && r.Term[1] == 'C':
		r.Verdict, r.Reason = Failed, ReasonUnreachable
	case r.Address == "" || strings.ContainsRune("PRI", rune(r.Term[0])):
		r.Verdict, r.Reason = Refused, ReasonOther
	default:
		r.Verdict, r.Reason = Allowed, ReasonAllowed
	}
	r.Why = Reasons[r.Reason]
	if r.Reason == ReasonOther {
		r.Why += " (HAProxy's termination state " + r.Term + ")"
	}
	return nil
}
