package task

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/internal/connlog"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// ReadEgressLog reads the task's egress log into s, in one pass: the
// names and destinations the firewall refused (EgressRefusals) and the
// destinations the gateway recorded (internal/connlog).
func (s *Summary) ReadEgressLog(log io.Reader, cidrs []netip.Prefix) {
	tee, parsed := connlog.Beside(log, time.Time{})
	s.RefusedNames, s.RefusedAddresses, s.RejectedPackets, _ = EgressRefusals(tee, cidrs)
	if l := parsed(nil); l != nil { // what was read, also when the reading failed
		s.Destinations, s.DroppedConnections = l.Destinations, l.Dropped
	}
}

// maxSummaryItems is how many destinations each line of the summary names.
const maxSummaryItems = 10

// NetworkLines are the summary's lines of the destinations the task used
// (the gateway's records) and of what the firewall refused, escaped for a
// terminal (internal/termsafe).
func (s *Summary) NetworkLines() []string {
	var lines []string
	if len(s.Destinations) > 0 || s.DroppedConnections > 0 {
		var shown []string
		for _, d := range s.Destinations[:min(len(s.Destinations), maxSummaryItems)] {
			shown = append(shown, d.Text())
		}
		line := "used     " + strings.Join(shown, ", ") + more(len(s.Destinations)-len(shown), "agentbox connections --task "+s.Task)
		if s.DroppedConnections > 0 {
			line += fmt.Sprintf("; %d records of connections dropped by the rate limit", s.DroppedConnections)
		}
		lines = append(lines, line)
	}
	var refused []string
	for _, n := range s.RefusedNames {
		refused = append(refused, fmt.Sprintf("%s (%d)", termsafe.String(n.Name), n.Count))
	}
	if len(refused) > 0 {
		lines = append(lines, "refused  "+strings.Join(refused, ", "))
	}
	if len(s.RefusedAddresses) > 0 {
		var shown []string
		for _, a := range s.RefusedAddresses[:min(len(s.RefusedAddresses), maxSummaryItems)] {
			shown = append(shown, fmt.Sprintf("%s (%d)", a, a.Count))
		}
		lines = append(lines, "refused  "+strings.Join(shown, ", ")+more(len(s.RefusedAddresses)-len(shown), "agentbox blocked --task"))
	}
	return lines
}

// more is " and N more (CMD lists them)", or "" when n is 0.
func more(n int, cmd string) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" and %d more (%s lists them)", n, cmd)
}
