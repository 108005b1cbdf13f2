package task

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// gatewayRecord is a record of the gateway for name on port 443.
func gatewayRecord(name string, up, down int, why string, dropped int) string {
	quoted, _ := json.Marshal(name) // as HAProxy's json(ascii) for ASCII names
	return fmt.Sprintf(`2026-11-22T10:00:01.000000000Z agentbox-gateway: {"start":1795341600.500,"port":443,"name":%s,"name_bytes":%d,"addr":"198.51.100.7","up":%d,"down":%d,"ms":15,"term":"--","why":%q,"dropped":%d}`,
		quoted, len(name), up, down, why, dropped)
}

// TestReadEgressLog: one pass over the log fills the refusals and the
// destinations, however long the log.
func TestReadEgressLog(t *testing.T) {
	lines := []string{"2026-11-22T10:00:00.000000000Z dnsmasq[25]: config api.evil.example is NXDOMAIN"}
	for range 5000 {
		lines = append(lines, gatewayRecord("api.example.com", 100, 2000, "-", 0))
	}
	lines = append(lines, gatewayRecord("other.example", 10, 0, "name", 3))
	var s Summary
	s.ReadEgressLog(strings.NewReader(strings.Join(lines, "\n")+"\n"), nil)
	if len(s.RefusedNames) != 1 || s.RefusedNames[0].Name != "api.evil.example" {
		t.Errorf("refused names: %+v", s.RefusedNames)
	}
	if len(s.Destinations) != 2 || s.Destinations[0].Name != "api.example.com" || s.Destinations[0].Connections != 5000 ||
		s.Destinations[0].BytesDown != 10_000_000 || s.Destinations[1].Refused != 1 || s.DroppedConnections != 3 {
		t.Errorf("destinations: %+v, dropped %d", s.Destinations, s.DroppedConnections)
	}
}

// TestNetworkLines: the destinations used, at most 10 named, the hostile
// names escaped, and the refusals.
func TestNetworkLines(t *testing.T) {
	lines := []string{gatewayRecord("api.example.com", 1200, 45000, "-", 0), gatewayRecord("\x1b]0;owned\x07.example", 300, 0, "name", 2)}
	for i := range 11 {
		lines = append(lines, gatewayRecord(fmt.Sprintf("n%02d.example", i), 1, 1, "-", 0))
	}
	s := Summary{Task: "fix-1"}
	s.ReadEgressLog(strings.NewReader(strings.Join(lines, "\n")), nil)
	s.RefusedNames = []NameCount{{"\x1b[2Jx.example", 2}}
	s.RefusedAddresses = []AddrCount{{Address: "10.1.2.3", Port: 5432, Protocol: "tcp", Count: 1}}
	got := s.NetworkLines()
	want := []string{
		"used     \\x1b]0;owned\\x07.example:443 (1, 1 refused, 300 B up, 0 B down), api.example.com:443 (1, 1.2 kB up, 45.0 kB down), " +
			"n00.example:443 (1, 1 B up, 1 B down), n01.example:443 (1, 1 B up, 1 B down), n02.example:443 (1, 1 B up, 1 B down), " +
			"n03.example:443 (1, 1 B up, 1 B down), n04.example:443 (1, 1 B up, 1 B down), n05.example:443 (1, 1 B up, 1 B down), " +
			"n06.example:443 (1, 1 B up, 1 B down), n07.example:443 (1, 1 B up, 1 B down) and 3 more (agentbox connections --task fix-1 lists them); " +
			"2 records of connections dropped by the rate limit",
		"refused  \\x1b[2Jx.example (2)",
		"refused  10.1.2.3:5432/tcp (1)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := (&Summary{}).NetworkLines(); len(got) != 0 {
		t.Errorf("nothing to say: %q", got)
	}
}
