package firewall

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/validate"
)

// normalize checks p and returns a sorted deep copy of it. The caller's
// slices are never modified. Every error is reported, list by list, the
// mode's last.
func normalize(p Policy) (Policy, error) {
	domains, errs := checkDomains(p.Domains)
	cidrs, cidrErrs := checkCIDRs(p.CIDRs)
	errs = append(errs, cidrErrs...)
	errs = append(errs, sortDomains(domains)...)
	errs = append(errs, sortCIDRs(cidrs)...)
	never, neverErrs := checkNever(p.Never)
	neverNames, nameErrs := checkNeverNames(p.NeverNames)
	errs = append(append(errs, neverErrs...), nameErrs...)
	if err := checkMode(p); err != nil {
		errs = append(errs, err)
	}
	out := Policy{Mode: p.Mode, Domains: domains, CIDRs: cidrs, Never: never, NeverNames: neverNames,
		// The gateway judges the names of allowed names' ports: none, no gateway.
		Gateway: Policy{Gateway: p.Gateway, Mode: p.Mode, Domains: domains}.HasGateway()}
	keys, keyErrs := checkKeys(p.Keys, out)
	forges, forgeErrs := checkForges(p.Forges, out)
	if err := errors.Join(append(append(errs, keyErrs...), forgeErrs...)...); err != nil {
		return Policy{}, err
	}
	out.Requests = p.Requests
	out.Keys, out.Forges = keys, forges
	return out, nil
}

// HasGateway says whether p, rendered, has a gateway: only when asked for,
// in ModeAllowlist, with names to judge (the ports of allowed names; with
// none, there is nothing for it to check).
func (p Policy) HasGateway() bool {
	return p.Gateway && p.Mode == ModeAllowlist && len(p.Domains) > 0
}

// checkDomains returns copies of the valid domains, with sorted ports and
// sources, and an error naming each invalid one.
func checkDomains(domains []Domain) ([]Domain, []error) {
	var errs []error
	out := make([]Domain, 0, len(domains))
	for _, d := range domains {
		ports, perr := checkPorts(d.Ports)
		sources, serr := checkSources(d.Sources)
		if err := errors.Join(checkName(d.Name), perr, serr); err != nil {
			errs = append(errs, fmt.Errorf("domain %q: %w", d.Name, err))
			continue
		}
		out = append(out, Domain{Name: d.Name, Ports: ports, Sources: sources})
	}
	return out, errs
}

// checkCIDRs returns copies of the valid CIDRs, with sorted ports and
// sources, and an error naming each invalid one.
func checkCIDRs(cidrs []CIDR) ([]CIDR, []error) {
	var errs []error
	out := make([]CIDR, 0, len(cidrs))
	for _, c := range cidrs {
		ports, perr := checkPorts(c.Ports)
		sources, serr := checkSources(c.Sources)
		if err := errors.Join(checkPrefix(c.Prefix), perr, serr); err != nil {
			errs = append(errs, fmt.Errorf("cidr %s: %w", c.Prefix, err))
			continue
		}
		out = append(out, CIDR{Prefix: c.Prefix, Ports: ports, Sources: sources})
	}
	return out, errs
}

// checkPrefix accepts a valid prefix that the generator's own validator
// accepts too (masked, not /0, not IPv4-mapped).
func checkPrefix(p netip.Prefix) error {
	if !p.IsValid() {
		return errors.New("invalid prefix")
	}
	_, err := validate.CIDR(p.String())
	return err
}

// sortDomains sorts domains by name and returns an error for each name
// listed twice.
func sortDomains(domains []Domain) []error {
	var errs []error
	slices.SortFunc(domains, func(a, b Domain) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(domains); i++ {
		if domains[i].Name == domains[i-1].Name {
			errs = append(errs, fmt.Errorf("domain %q: listed twice", domains[i].Name))
		}
	}
	return errs
}

// sortCIDRs sorts cidrs by prefix and returns an error for each prefix
// listed twice.
func sortCIDRs(cidrs []CIDR) []error {
	var errs []error
	slices.SortFunc(cidrs, comparePrefix)
	for i := 1; i < len(cidrs); i++ {
		if cidrs[i].Prefix == cidrs[i-1].Prefix {
			errs = append(errs, fmt.Errorf("cidr %s: listed twice", cidrs[i].Prefix))
		}
	}
	return errs
}

// checkNever returns the masked, valid prefixes of never, sorted and
// unique, and an error naming each other one.
func checkNever(never []netip.Prefix) ([]netip.Prefix, []error) {
	var out []netip.Prefix
	var errs []error
	for _, n := range never {
		if !n.IsValid() || n != n.Masked() {
			errs = append(errs, fmt.Errorf("never %s: not a masked, valid prefix", n))
			continue
		}
		out = append(out, n)
	}
	slices.SortFunc(out, ComparePrefix)
	return slices.Compact(out), errs
}

// checkNeverNames returns the normalized names of names, sorted and unique,
// and an error naming each other one.
func checkNeverNames(names []string) ([]string, []error) {
	var out []string
	var errs []error
	for _, n := range names {
		if err := checkName(n); err != nil {
			errs = append(errs, fmt.Errorf("never %q: %w", n, err))
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), errs
}

// checkMode checks that p's mode is known and that its lists fit it.
func checkMode(p Policy) error {
	switch p.Mode {
	case ModeAllowlist:
	case ModeNone:
		if len(p.Domains)+len(p.CIDRs) > 0 {
			return errors.New("mode none admits no names and no CIDRs")
		}
	case ModeOpen:
		if len(p.Domains) > 0 {
			return errors.New("mode open admits every public name already: list no domains (CIDRs admit private ranges)")
		}
	default:
		return fmt.Errorf("unknown mode %q, valid modes are %q, %q and %q", p.Mode, ModeAllowlist, ModeNone, ModeOpen)
	}
	return nil
}

// checkName accepts a lower-case RFC 1123 host name of at least two labels
// whose last label is not numeric (so it cannot be mistaken for an address).
// checkName checks a name again with the generator's own validator: any
// character outside an RFC 1123 label (space, ';', '$', '/', '#', quotes,
// newline, ...) could change the meaning of an nftables or dnsmasq line.
func checkName(name string) error {
	n, wildcard, err := validate.Domain(name)
	switch {
	case err != nil:
		return err
	case wildcard || n != name:
		return fmt.Errorf("name %q is not normalized: want lower case, no \"*.\" and no trailing dot", name)
	}
	return nil
}

// checkPorts returns a sorted copy of non-empty, unique ports in 1-65535.
func checkPorts(ports []uint16) ([]uint16, error) {
	if len(ports) == 0 {
		return nil, errors.New("no ports")
	}
	out := slices.Clone(ports)
	slices.Sort(out)
	if out[0] == 0 {
		return nil, errors.New("invalid port 0: must be 1-65535")
	}
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, fmt.Errorf("port %d listed twice", out[i])
		}
	}
	return out, nil
}

// checkSources returns a sorted, de-duplicated copy of sources. They end up in
// comments only, but a line break would end the comment, so each must be
// printable ASCII.
func checkSources(sources []string) ([]string, error) {
	out := slices.Clone(sources)
	for _, s := range out {
		if s == "" || strings.TrimSpace(s) != s {
			return nil, fmt.Errorf("invalid source %q: empty or surrounded by spaces", s)
		}
		for _, r := range s {
			if r < 0x20 || r > 0x7e {
				return nil, fmt.Errorf("invalid source %q: only printable ASCII is allowed", s)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// comparePrefix orders IPv4 before IPv6, then by address, then by bits.
func comparePrefix(a, b CIDR) int { return ComparePrefix(a.Prefix, b.Prefix) }

// ComparePrefix orders prefixes as a Policy lists them: IPv4 before IPv6,
// then by address, then by length.
func ComparePrefix(pa, pb netip.Prefix) int {
	if c := cmp.Compare(pa.Addr().BitLen(), pb.Addr().BitLen()); c != 0 {
		return c
	}
	if c := pa.Addr().Compare(pb.Addr()); c != 0 {
		return c
	}
	return cmp.Compare(pa.Bits(), pb.Bits())
}
