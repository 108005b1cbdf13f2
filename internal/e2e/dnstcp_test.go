//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strings"
)

// dnsClient is a DNS client for the agent container, in Perl (perl-base is
// in every Debian image):
//
//	perl -e "$dnsClient" SERVER udp|tcp NAME...
//
// asks for the A records of each NAME: over udp one datagram each, over tcp
// every query written at once on one connection (pipelined, as RFC 7766
// lets a client) before any answer is read. One line per answer:
// "NAME RCODE tc=0|1 COUNT ADDRESS,...".
const dnsClient = `use strict; use warnings; use IO::Socket::INET;
$| = 1;
my ($server, $proto, @names) = @ARGV;
$SIG{ALRM} = sub { print "timeout\n"; exit 2 };
alarm 15;
sub query {
	my ($id, $name) = @_;
	my $q = pack("n6", $id, 0x0100, 1, 0, 0, 0);
	$q .= pack("C/a*", $_) for split /\./, $name;
	return $q . pack("Cnn", 0, 1, 1);
}
sub show {
	my ($m) = @_;
	my ($id, $flags, $qd, $an) = unpack("n4", $m);
	my $p = 12;
	my $skip = sub {
		while (1) {
			my $l = ord substr($m, $p, 1);
			if ($l >= 0xc0) { $p += 2; return }
			$p += 1 + $l;
			return if $l == 0;
		}
	};
	for (1 .. $qd) { $skip->(); $p += 4 }
	my @a;
	for (1 .. $an) {
		$skip->();
		my ($type, $class, $ttl, $len) = unpack("nnNn", substr($m, $p, 10));
		$p += 10;
		push @a, join(".", unpack("C4", substr($m, $p, 4))) if $type == 1 && $len == 4;
		$p += $len;
	}
	my %rc = (0 => "NOERROR", 2 => "SERVFAIL", 3 => "NXDOMAIN", 5 => "REFUSED");
	printf "%s %s tc=%d %d %s\n", $names[$id - 1] // "id$id", $rc{$flags & 15} // "RCODE" . ($flags & 15),
		($flags >> 9) & 1, scalar @a, join(",", @a);
}
my $s = IO::Socket::INET->new(PeerAddr => $server, PeerPort => 53, Proto => $proto) or die "$proto to $server: $!\n";
if ($proto eq "tcp") {
	print $s join "", map { my $q = query($_ + 1, $names[$_]); pack("n", length $q) . $q } 0 .. $#names;
	for (@names) {
		my ($l, $m);
		(read($s, $l, 2) // 0) == 2 or die "the connection ended before every answer\n";
		my $n = unpack("n", $l);
		(read($s, $m, $n) // 0) == $n or die "the connection ended inside an answer\n";
		show($m);
	}
} else {
	for (0 .. $#names) {
		$s->send(query($_ + 1, $names[$_])) or die "send: $!\n";
		my $m;
		defined $s->recv($m, 65535) or die "recv: $!\n";
		show($m);
	}
}
`

// checkDNSOverTCP: in the agent container, DNS over TCP through the
// filter, whose upstream is Docker's embedded resolver (127.0.0.11 behind
// its DNAT, which sends TCP to another port than UDP), which forwards to
// the fake DNS.
//   - A name whose answer is too large for UDP (bigCount addresses) comes
//     truncated over UDP; glibc's resolver then asks over TCP and gets
//     every address.
//   - Queries pipelined on one TCP connection, the first for a name the
//     filter refuses, the next for allowed names never asked before (so
//     that the filter forwards them over TCP): each gets its answer.
func checkDNSOverTCP(e *env, p *project) {
	t := e.t
	var want []string
	for i := 1; i <= bigCount; i++ {
		want = append(want, fmt.Sprintf("198.18.1.%d", i))
	}
	line := func(name, rcode string, addrs ...string) string {
		return fmt.Sprintf("%s %s tc=0 %d %s", name, rcode, len(addrs), strings.Join(addrs, ","))
	}

	r := p.agentbox(nil, "shell", "--", "perl", "-e", dnsClient, "127.0.0.11", "udp", "udp."+bigName)
	if !strings.Contains(r.stdout, "udp."+bigName+" NOERROR tc=1 ") {
		t.Errorf("a large answer over UDP: want it truncated (tc=1): %s", r)
	}

	r = p.agentbox(nil, "shell", "--", "bash", "-c", `getent ahostsv4 "$1" | awk '{print $1}' | sort -u | wc -l`, "_", "glibc."+bigName)
	if strings.TrimSpace(r.stdout) != fmt.Sprint(bigCount) {
		t.Errorf("getent ahostsv4 %s (glibc: UDP, truncated, then TCP): want %d addresses: %s", "glibc."+bigName, bigCount, r)
	}

	names := []string{"first." + unlistedName, "pipe." + allowedName, "pipe." + bigName, "second." + unlistedName, "pipe2." + allowedName}
	r = p.agentbox(nil, append([]string{"shell", "--", "perl", "-e", dnsClient, "127.0.0.11", "tcp"}, names...)...)
	for _, w := range []string{
		line(names[0], "NXDOMAIN"),
		line(names[1], "NOERROR", webIP),
		line(names[2], "NOERROR", want...),
		line(names[3], "NXDOMAIN"),
		line(names[4], "NOERROR", webIP),
	} {
		if !strings.Contains(r.stdout, w+"\n") {
			if len(w) > 120 {
				w = w[:120] + "..."
			}
			t.Errorf("%d queries pipelined on one TCP connection: no line %q in: %s", len(names), w, r)
		}
	}

	// The fake DNS saw the large answer truncated over UDP and asked again
	// over TCP, from the egress container.
	eg := e.container(p.name, "egress")
	egIP := strings.TrimSpace(e.docker("inspect", "--format", `{{(index .NetworkSettings.Networks "`+e.netName+`").IPAddress}}`, eg).stdout)
	dnsLog := e.logsOf(e.dnsName)
	for _, re := range []string{
		`dns udp ` + regexp.QuoteMeta(egIP) + `:\d+ glibc\.` + regexp.QuoteMeta(bigName) + ` A -> \d+ addresses, truncated`,
		`dns tcp ` + regexp.QuoteMeta(egIP) + `:\d+ glibc\.` + regexp.QuoteMeta(bigName) + ` A -> \d+ addresses\n`,
		`dns tcp ` + regexp.QuoteMeta(egIP) + `:\d+ pipe\.` + regexp.QuoteMeta(bigName) + ` A -> \d+ addresses\n`,
	} {
		if !regexp.MustCompile(re).MatchString(dnsLog) {
			t.Errorf("the fake DNS's log has no line %s:\n%s", re, tail(dnsLog, 30))
		}
	}
}
