package egress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/connlog"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// ConnectionsIn is what the gateway recorded of the connections of the
// sandbox in dir (task "") or of its task: its egress log, opened by open
// from since on when since is not zero, read by connlog.Parse.
func ConnectionsIn(ctx context.Context, open LogSource, dir, task string, since time.Time) (*connlog.Log, error) {
	log, err := open(ctx, dir, task, since)
	if err != nil {
		return nil, err
	}
	l, err := connlog.Parse(log, since)
	if cerr := log.Close(); err == nil {
		err = cerr
	}
	return l, err
}

// WriteConnections writes l as agentbox connections prints it: a table
// of the records, oldest first, then what was dropped or skipped; or, with
// asJSON, l as indented JSON with what encoding/json leaves raw that a
// terminal would take escaped (internal/termsafe.JSON).
func WriteConnections(w io.Writer, l *connlog.Log, asJSON bool) error {
	if asJSON {
		data, err := json.MarshalIndent(l, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(termsafe.JSON(data), '\n'))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(l.Connections) == 0 {
		fmt.Fprintln(tw, "no connections recorded")
	} else {
		fmt.Fprintln(tw, connlog.RowHeader)
	}
	for _, r := range l.Connections {
		fmt.Fprintln(tw, r.Row())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range []struct {
		n    int
		text string
	}{
		{l.NotListed, fmt.Sprintf("records beyond the first %d, not listed", connlog.MaxRecords)},
		{l.Dropped, fmt.Sprintf("records dropped by the gateway's rate limit (at most %d in %d s; each record written counts those dropped before it)",
			firewall.GatewayLogBurst, firewall.GatewayLogPeriod)},
		{l.BadRecords, "malformed records of the gateway skipped"},
		{l.Skipped, fmt.Sprintf("log lines longer than %d KiB skipped", connlog.MaxLine>>10)},
	} {
		if line.n > 0 {
			if _, err := fmt.Fprintf(w, "%d %s\n", line.n, line.text); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseSince reads a --since: empty (everything), a positive duration
// before now, or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("invalid --since %q: a positive duration (1h, 30m) or an RFC 3339 time (2026-01-02T15:04:05Z)", s)
}
