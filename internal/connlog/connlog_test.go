package connlog

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// logLines are records as the lab's HAProxy wrote them
// (TestLabGatewayRecords), with Docker's timestamps.
var logLines = []string{
	`2026-11-27T15:00:01.000000000Z agentbox-gateway: {"start":1795793687.916,"port":443,"name":"allowed.test","name_bytes":12,"addr":"198.18.0.10","up":80,"down":22,"ms":1,"term":"--","why":"-","dropped":0}`,
	`2026-11-27T15:00:02.000000000Z agentbox-gateway: {"start":1795793687.922,"port":443,"name":"cohost.test","name_bytes":11,"addr":"-","up":79,"down":0,"ms":0,"term":"PR","why":"name","dropped":0}`,
	`2026-11-27T15:00:03.000000000Z agentbox-gateway: {"start":1795793687.918,"port":80,"name":"allowed.test","name_bytes":12,"addr":"198.18.0.10","up":57,"down":162,"ms":4,"term":"--","why":"-","dropped":3}`,
	`2026-11-27T15:00:04.000000000Z agentbox-gateway: {"start":1795793687.922,"port":443,"name":"-","name_bytes":0,"addr":"-","up":59,"down":0,"ms":0,"term":"PR","why":"no_name","dropped":0}`,
	`2026-11-27T15:00:05.000000000Z agentbox-gateway: {"start":1795793687.923,"port":443,"name":"-","name_bytes":0,"addr":"-","up":4,"down":0,"ms":0,"term":"PR","why":"protocol","dropped":0}`,
	`2026-11-27T15:00:06.000000000Z agentbox-gateway: {"start":1795793688.933,"port":443,"name":"deep.wild.test","name_bytes":14,"addr":"2001:2::20","up":82,"down":0,"ms":1,"term":"SC","why":"-","dropped":0}`,
	`2026-11-27T15:00:07.000000000Z agentbox-gateway: {"start":1795793688.935,"port":443,"name":"a b\"c=d\\e\u0001\u001b]0;x\u0007\r\u007f\u00ff\u00c3\u00a9]}{\nagentbox-gateway: {\"start\":1}","name_bytes":54,"addr":"-","up":239,"down":0,"ms":0,"term":"PR","why":"name","dropped":0}`,
	`2026-11-27T15:00:08.000000000Z agentbox-gateway: {"start":1795793687.923,"port":443,"name":"ten.private.test","name_bytes":16,"addr":"-","up":84,"down":0,"ms":1006,"term":"PR","why":"unresolved","dropped":0}`,
	`2026-11-27T15:00:09.000000000Z agentbox-gateway: {"start":1795793689.939,"port":443,"name":"-","name_bytes":0,"addr":"-","up":20,"down":0,"ms":5001,"term":"PR","why":"timeout","dropped":0}`,
	`2026-11-27T15:00:10.000000000Z agentbox-gateway: {"start":1795793690.001,"port":443,"name":"-","name_bytes":1,"addr":"-","up":20,"down":0,"ms":3,"term":"PR","why":"name","dropped":2}`,
}

// TestParse: each record's verdict and reason, the hostile name as sent,
// the destinations, the dropped count, and what is not a record.
func TestParse(t *testing.T) {
	log := strings.Join(append(logLines,
		`2026-11-27T15:00:11.000000000Z dnsmasq[25]: query[A] agentbox-gateway: {"start":1}`,
		`2026-11-27T15:00:12.000000000Z {"oob.prefix":"agentbox-refused:udp"}`,
		"egress-1  | "+strings.SplitN(logLines[0], " ", 2)[1],
	), "\n")
	l, err := Parse(strings.NewReader(log), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	type got struct{ name, verdict, reason, addr string }
	want := []got{
		{"allowed.test", Allowed, ReasonAllowed, "198.18.0.10"},
		{"cohost.test", Refused, WhyName, ""},
		{"allowed.test", Allowed, ReasonAllowed, "198.18.0.10"},
		{"", Refused, WhyNoName, ""},
		{"", Refused, WhyProtocol, ""},
		{"deep.wild.test", Failed, ReasonUnreachable, "2001:2::20"},
		{"a b\"c=d\\e\x01\x1b]0;x\x07\r\x7f\xff\xc3\xa9]}{\nagentbox-gateway: {\"start\":1}", Refused, WhyName, ""},
		{"ten.private.test", Refused, WhyUnresolved, ""},
		{"", Refused, WhyTimeout, ""},
		{"-", Refused, WhyName, ""},
		{"allowed.test", Allowed, ReasonAllowed, "198.18.0.10"},
	}
	if len(l.Connections) != len(want) || l.BadRecords != 0 || l.Dropped != 5 || l.Skipped != 0 {
		t.Fatalf("%d records (%d bad, %d dropped): %+v", len(l.Connections), l.BadRecords, l.Dropped, l)
	}
	for i, w := range want {
		r := l.Connections[i]
		if g := (got{r.Name, r.Verdict, r.Reason, r.Address}); g != w || r.Why != Reasons[w.reason] {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
	}
	if r := l.Connections[0]; r.Port != 443 || r.BytesUp != 80 || r.BytesDown != 22 || r.DurationMS != 1 ||
		!r.Start.Equal(time.Unix(1795793687, 916e6)) || r.Logged.Format(time.RFC3339) != "2026-11-27T15:00:01Z" {
		t.Errorf("the first record: %+v", r)
	}
	d := l.Destinations[1]
	if d.String() != "allowed.test:443" || d.Connections != 2 || d.Refused != 0 || d.BytesUp != 160 || d.BytesDown != 44 {
		t.Errorf("the first destination: %+v (%v)", d, l.Destinations)
	}
	if d := l.Destinations[0]; d.String() != "(none):443" || d.Connections != 3 || d.Refused != 3 {
		t.Errorf("the connections with no name: %+v", d)
	}
}

// TestParseSince: records written before since are left out; a line
// without a timestamp is dated by its connection's end.
func TestParseSince(t *testing.T) {
	bare := strings.SplitN(logLines[1], " ", 2)[1] // ended at 1795793687.922
	log := strings.Join([]string{logLines[0], logLines[2], bare}, "\n")
	l, err := Parse(strings.NewReader(log), time.Date(2026, 11, 27, 15, 0, 2, 0, time.UTC))
	if err != nil || len(l.Connections) != 2 || l.Connections[0].Port != 80 || l.Dropped != 3 {
		t.Errorf("since 15:00:02: %+v, %v", l, err)
	}
	if l, _ = Parse(strings.NewReader(bare), time.Unix(1795793687, 900e6)); len(l.Connections) != 1 {
		t.Errorf("a record without a timestamp, ended after since: %+v", l)
	}
	if l, _ = Parse(strings.NewReader(bare), time.Unix(1795793687, 923e6)); len(l.Connections) != 0 {
		t.Errorf("a record without a timestamp, ended before since: %+v", l)
	}
}

// TestParseBad: records that are not exactly what HAProxy writes count
// as bad, and forge nothing.
func TestParseBad(t *testing.T) {
	good := strings.SplitN(logLines[1], " ", 2)[1] // agentbox-gateway: {...}
	for name, line := range map[string]string{
		"not JSON":      Prefix + " name=x",
		"two objects":   good + " {}",
		"text after":    good + " x",
		"unknown field": strings.Replace(good, `"port"`, `"other":1,"port"`, 1),
		"missing field": strings.Replace(good, `"addr":"-",`, ``, 1),
		"no dropped":    strings.Replace(good, `,"dropped":0`, "", 1),
		"name length":   strings.Replace(good, `"name_bytes":11`, `"name_bytes":12`, 1),
		"empty name":    strings.Replace(good, `"name":"cohost.test","name_bytes":11`, `"name":"","name_bytes":0`, 1),
		"wide rune":     strings.Replace(good, `"name":"cohost.test","name_bytes":11`, `"name":"\u0100","name_bytes":1`, 1),
		"raw UTF-8":     strings.Replace(good, `"name":"cohost.test","name_bytes":11`, `"name":"é","name_bytes":1`, 1),
		"address":       strings.Replace(good, `"addr":"-"`, `"addr":"1.2.3"`, 1),
		"zone":          strings.Replace(good, `"addr":"-"`, `"addr":"fe80::1%eth0"`, 1),
		"port":          strings.Replace(good, `"port":443`, `"port":0`, 1),
		"negative":      strings.Replace(good, `"up":79`, `"up":-1`, 1),
		"term":          strings.Replace(good, `"term":"PR"`, `"term":"P\n"`, 1),
		"why":           strings.Replace(good, `"why":"name"`, `"why":"allowed"`, 1),
		"start":         strings.Replace(good, `"start":1795793687.922`, `"start":1795793687.9`, 1),
		"start in E":    strings.Replace(good, `"start":1795793687.922`, `"start":1e9`, 1),
		"fraction":      strings.Replace(good, `"up":79`, `"up":79.5`, 1),
		"null":          strings.Replace(good, `"port":443`, `"port":null`, 1),
	} {
		l, err := Parse(strings.NewReader(line+"\n"), time.Time{})
		if err != nil || len(l.Connections) != 0 || l.BadRecords != 1 {
			t.Errorf("%s: %q gave %+v, %v", name, line, l, err)
		}
	}
	long := Prefix + " " + strings.Repeat("x", MaxLine+10) + "\n" + good + "\n"
	if l, _ := Parse(strings.NewReader(long), time.Time{}); l.Skipped != 1 || len(l.Connections) != 1 {
		t.Errorf("a long line: %+v", l)
	}
}

// haproxyJSON escapes b as HAProxy 2.6's json(ascii) converter does.
func haproxyJSON(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		switch {
		case c == '"' || c == '\\' || c == '/':
			s.WriteByte('\\')
			s.WriteByte(c)
		case c == '\b':
			s.WriteString(`\b`)
		case c == '\f':
			s.WriteString(`\f`)
		case c == '\r':
			s.WriteString(`\r`)
		case c == '\n':
			s.WriteString(`\n`)
		case c == '\t':
			s.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&s, `\u%04x`, c)
		default:
			s.WriteByte(c)
		}
	}
	return s.String()
}

// FuzzName: whatever name the agent sends, the record HAProxy writes for
// it (escaped by json(ascii), its first GatewayLogNameMax bytes) parses as
// one record with that name, and forges nothing.
func FuzzName(f *testing.F) {
	for _, s := range []string{"allowed.test", "", "-", "a b\"c=d\\e\x01\n\r\x7f\xff]}{", "\nagentbox-gateway: {}", strings.Repeat("é", 200)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, name []byte) {
		shown := name[:min(len(name), NameMax)]
		field := haproxyJSON(shown)
		if field == "" {
			field = none
		}
		line := fmt.Sprintf(`2026-11-27T15:00:01Z %s {"start":1795793687.916,"port":443,"name":"%s","name_bytes":%d,"addr":"-","up":1,"down":0,"ms":0,"term":"PR","why":"name","dropped":0}`,
			Prefix, field, len(name))
		if strings.ContainsAny(line, "\n\r") {
			t.Fatalf("the record holds a line break: %q", line)
		}
		l, err := Parse(strings.NewReader(line+"\n"), time.Time{})
		if err != nil || len(l.Connections) != 1 || l.BadRecords != 0 {
			t.Fatalf("%q: %+v, %v", line, l, err)
		}
		if r := l.Connections[0]; r.Name != string(shown) || r.NameBytes != len(name) || r.Reason != WhyName {
			t.Fatalf("%q: %+v", name, r)
		}
	})
}

// FuzzParse: whatever the log holds, Parse does not fail, and every record
// it takes is one a record can be: a verdict with its reason, a name no
// longer than it says, an address that parses.
func FuzzParse(f *testing.F) {
	for _, l := range logLines {
		f.Add(l)
	}
	f.Add(Prefix + ` {"start":1.000,"port":1,"name":"\u00ff","name_bytes":300,"addr":"::1","up":0,"down":0,"ms":0,"term":"sC","why":"-","dropped":0}`)
	f.Fuzz(func(t *testing.T, log string) {
		l, err := Parse(strings.NewReader(log), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		records := strings.Count(log, Prefix+" ")
		if len(l.Connections)+l.BadRecords > records {
			t.Fatalf("%d records and %d bad ones from %d prefixes", len(l.Connections), l.BadRecords, records)
		}
		for _, r := range l.Connections {
			why, ok := Reasons[r.Reason]
			if !ok || !strings.HasPrefix(r.Why, why) || r.Port < 1 || r.Port > 65535 || r.NameBytes < len(r.Name) ||
				len(r.Name) > NameMax || (r.Verdict == Allowed) != (r.Reason == ReasonAllowed) {
				t.Fatalf("%+v", r)
			}
		}
	})
}
