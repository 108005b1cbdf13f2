package firewall

import (
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/dnswire"
)

// neverJudge runs the never filter's judgment (its subroutines, without
// the sockets) of the rendered entrypoint of policy "rich" (never:
// corp.example) on pairs of query and reply, and returns one line per
// pair: "pass", or "refuse: WHY" and the REFUSED answer in hexadecimal.
func neverJudge(t *testing.T, pairs [][2][]byte) []string {
	t.Helper()
	perl := requireTool(t, "perl", false)
	prog := sourceEntrypoint(t, `printf '%s' "$NEVER_DNS_PL"`)
	subs, _, ok := strings.Cut(prog, "\n# The filter: its sockets")
	if !ok {
		t.Fatalf("no sockets part in the never filter:\n%s", prog)
	}
	subs += `
while (my $line = <STDIN>) {
	my ($q, $r) = map { pack 'H*', $_ } split ' ', $line;
	my $why = verdict($q, $r);
	print $why eq '' ? "pass\n" : "refuse: $why " . unpack('H*', refused($q) // '') . "\n";
}
`
	var in strings.Builder
	for _, p := range pairs {
		fmt.Fprintf(&in, "%x %x\n", p[0], p[1])
	}
	cmd := exec.Command(perl, "-e", subs, strings.Join(policies["rich"].NeverNames, " "), "192.0.2.53")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("perl: %v\n%s", err, out)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

// TestNeverJudge: the never filter refuses an answer in which a never name
// or a name below it is the owner of a record or the target of a CNAME or
// DNAME, in any case of letters, and an answer it cannot read whole or that
// answers another question; it passes every other answer, and the answers
// to the never names themselves (the keeper's questions). Its refusal is a
// REFUSED answer to the query.
func TestNeverJudge(t *testing.T) {
	query := func(name string) []byte {
		b, err := dnswire.BuildQuery(7, name, dnswire.TypeA)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	reply := func(name string, answers ...dnswire.Answer) []byte {
		b, err := dnswire.BuildReply(dnswire.Question{ID: 7, Name: name, Type: dnswire.TypeA, RD: true}, dnswire.RcodeSuccess, answers)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := func(owner, addr string) dnswire.Answer {
		return dnswire.Answer{Name: owner, Type: dnswire.TypeA, TTL: 60, Value: addr}
	}
	cname := func(owner, target string) dnswire.Answer {
		return dnswire.Answer{Name: owner, Type: dnswire.TypeCNAME, TTL: 60, Value: target}
	}
	dname := func(owner, target string) dnswire.Answer {
		return dnswire.Answer{Name: owner, Type: dnswire.TypeDNAME, TTL: 60, Value: target}
	}
	// A reply whose answer's owner is a compression pointer to itself.
	loop := reply("cdn.test")
	loop = append(loop[:7:7], 1)                     // ANCOUNT 1
	loop = append(loop, reply("cdn.test")[8:]...)    // the rest of the header and the question
	loop = append(loop, 0xc0, byte(len(loop)), 0, 1) // the owner, then the type
	loop = append(loop, 0, 1, 0, 0, 0, 60, 0, 4, 198, 51, 100, 1)
	truncated := reply("cdn.test")
	truncated[2] |= 0x02 // TC
	otherID := reply("cdn.test", a("cdn.test", "192.0.2.1"))
	otherID[1]++

	cases := []struct {
		name         string
		query, reply []byte
		want         string
	}{
		{"plain", query("cdn.test"), reply("cdn.test", a("cdn.test", "192.0.2.1")), "pass"},
		{"CNAME elsewhere", query("cdn.test"), reply("cdn.test", cname("cdn.test", "edge.test"), a("edge.test", "192.0.2.1")), "pass"},
		{"a name that ends alike", query("cdn.test"), reply("cdn.test", cname("cdn.test", "notcorp.example"), a("notcorp.example", "192.0.2.1")), "pass"},
		{"truncated", query("cdn.test"), truncated, "pass"},
		{"the keeper's question", query("corp.example"), reply("corp.example", cname("corp.example", "edge.test"), a("edge.test", "192.0.2.1")), "pass"},
		{"CNAME below", query("cdn.test"), reply("cdn.test", cname("cdn.test", "x.corp.example"), a("x.corp.example", "192.0.2.1")),
			"refuse: cdn.test leads to x.corp.example, below corp.example"},
		{"CNAME to it", query("cdn.test"), reply("cdn.test", cname("cdn.test", "corp.example")), "refuse: cdn.test leads to corp.example, below corp.example"},
		{"CNAME in capitals", query("cdn.test"), reply("cdn.test", cname("cdn.test", "X.Corp.EXAMPLE")), "refuse: cdn.test leads to x.corp.example, below corp.example"},
		{"chain", query("cdn.test"), reply("cdn.test", cname("cdn.test", "hop.test"), cname("hop.test", "x.corp.example"), a("x.corp.example", "192.0.2.1")),
			"refuse: hop.test leads to x.corp.example, below corp.example"},
		{"DNAME", query("x.cdn.test"), reply("x.cdn.test", dname("cdn.test", "corp.example")), "refuse: cdn.test leads to corp.example, below corp.example"},
		{"owner below", query("cdn.test"), reply("cdn.test", a("cdn.test", "192.0.2.1"), a("y.corp.example", "192.0.2.2")), "refuse: y.corp.example is below corp.example"},
		{"compression loop", query("cdn.test"), loop, "refuse: malformed"},
		{"cut short", query("cdn.test"), reply("cdn.test", a("cdn.test", "192.0.2.1"))[:40], "refuse: malformed"},
		{"another question", query("cdn.test"), reply("edge.test", a("edge.test", "192.0.2.1")), "refuse: another question"},
		{"another ID", query("cdn.test"), otherID, "refuse: another question"},
	}
	var pairs [][2][]byte
	for _, c := range cases {
		pairs = append(pairs, [2][]byte{c.query, c.reply})
	}
	verdicts := neverJudge(t, pairs)
	if len(verdicts) != len(cases) {
		t.Fatalf("%d verdicts for %d pairs: %q", len(verdicts), len(cases), verdicts)
	}
	for n, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := verdicts[n]
			if c.want == "pass" {
				if got != "pass" {
					t.Fatalf("got %q, want pass", got)
				}
				return
			}
			i := strings.LastIndex(got, " ")
			if i < 0 || got[:i] != c.want {
				t.Fatalf("got %q, want %q and the refusal", got, c.want)
			}
			msg, err := hex.DecodeString(got[i+1:])
			if err != nil {
				t.Fatal(err)
			}
			r, err := dnswire.ParseReply(msg)
			if err != nil || r.ID != 7 || r.Rcode != dnswire.RcodeRefused || len(r.Answers) != 0 {
				t.Errorf("the refusal: %+v %v, want REFUSED with ID 7 and no answer", r, err)
			}
			q, err := dnswire.ParseQuery(c.query)
			if err != nil {
				t.Fatal(err)
			}
			if echoed, _ := dnswire.ParseQuery(append([]byte{0, 7, 1, 0}, msg[4:]...)); echoed.Name != q.Name {
				t.Errorf("the refusal's question is %q, want %q", echoed.Name, q.Name)
			}
		})
	}
}
