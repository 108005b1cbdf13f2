package firewall_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
)

// hostileName is a name the agent sends in its ClientHello: a space, quotes,
// "=", a backslash, control bytes, bytes that are no UTF-8, and a newline
// followed by a whole record of its own.
const hostileName = "a b\"c=d\\e\x01\x1b]0;x\x07\r\x7f\xff\xc3\xa9]}{" +
	"\n" + firewall.GatewayLogPrefix + ` {"start":1,"port":443,"name":"forged","name_bytes":6,"addr":"192.0.2.1","up":1,"down":1,"ms":1,"term":"--","why":"","dropped":0}`

// gatewayRecordLines returns the lines of egress's log that carry the
// gateway's record prefix.
func gatewayRecordLines(out string) []string {
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, firewall.GatewayLogPrefix) {
			lines = append(lines, line)
		}
	}
	return lines
}

// TestLabGatewayRecordsNotForged: a name the agent sends cannot make the
// gateway write a second record, nor a line that begins like one.
func TestLabGatewayRecordsNotForged(t *testing.T) {
	l := newGatewayLab(t)
	l.resolve("allowed.test", "A")
	l.stopped("a hostile SNI", allowedV4, 443, clientHello(hostileName, false))
	l.stopped("a hostile Host", allowedV4, 80, httpHead("h a\"b=c\x01\x7f\xff \\ x=\"y\""))
	time.Sleep(200 * time.Millisecond)
	out := l.egress.Output()
	lines := gatewayRecordLines(out)
	if len(lines) != 2 {
		t.Errorf("2 connections gave %d lines with the record prefix:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, firewall.GatewayLogPrefix+" {") {
			t.Errorf("a line with the prefix inside: %q", line)
		}
	}
}
