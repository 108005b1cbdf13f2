package denials

import (
	"net/netip"
	"regexp"
)

// The firewall refuses TCP to an unlisted address and TCP to a listed
// destination on a port the policy does not allow with one rule. Parse
// tells them apart afterwards: an address the filter resolver answered for
// a name (so an allowed name's, on the port asked), or one inside a CIDR
// the policy lists, was refused for its port.

// ReasonPort is the reason of a refused connection to an allowed
// destination on a port the policy does not allow.
const ReasonPort = "port"

// maxAnswers bounds the addresses Parse remembers from the resolver's
// answers.
const maxAnswers = 10000

// answerLine is dnsmasq's log of an answer (log-queries): the name and an
// address it resolved to, from the upstream or from its cache.
var answerLine = regexp.MustCompile(`^dnsmasq\[[0-9]+\]: (?:reply|cached) (\S+) is ([0-9A-Fa-f.:]+)$`)

// Ports makes Parse report a TCP refusal as ReasonPort when its address
// was allowed on other ports: a refusal with the key unlisted (the
// firewall's reason for TCP to an unlisted address or port) whose address
// was an answer of the filter resolver or lies in one of cidrs, and one
// with the key special (a private or special-purpose range) that lies in
// one of cidrs, which admit such ranges on their own ports.
func Ports(unlisted, special string, cidrs []netip.Prefix) Option {
	return func(p *parser) { p.unlisted, p.special, p.cidrs = unlisted, special, cidrs }
}

// answer remembers the name an address was an answer for.
func (p *parser) answer(l string) bool {
	m := answerLine.FindStringSubmatch(l)
	if m == nil {
		return false
	}
	addr, err := netip.ParseAddr(m[2])
	if err != nil {
		return true
	}
	if p.answers == nil {
		p.answers = map[netip.Addr]string{}
	}
	if _, ok := p.answers[addr.Unmap()]; ok || len(p.answers) < maxAnswers {
		p.answers[addr.Unmap()] = lowerASCII(m[1])
	}
	return true
}

// portReason turns the unlisted refusals of allowed destinations into
// ReasonPort ones, saying which name or CIDR allowed the address.
func (p *parser) portReason(d *Dest) {
	if d.Proto != "tcp" || p.unlisted == "" || d.Reason != p.unlisted && d.Reason != p.special {
		return
	}
	if name, ok := p.answers[d.Addr]; ok && d.Reason == p.unlisted {
		d.Reason, d.Why = ReasonPort, "TCP to an address of "+name+" (answered by the filter) on a port the policy does not allow for it"
		return
	}
	for _, c := range p.cidrs {
		if c.Contains(d.Addr) {
			d.Reason, d.Why = ReasonPort, "TCP to "+c.String()+" (network.cidrs) on a port the policy does not allow for it"
			return
		}
	}
}
