package firewall

import "fmt"

// renderDnsmasq renders dnsmasq.conf for a normalized policy.
//
// Forwarding is not in this file. dnsmasq 2.90 forwards every name, listed or
// not, when address=/#/ is combined with server=/NAME/# and upstream servers
// that have no domain (--server=IP): the plain servers take precedence over
// address=/#/. Only server=/NAME/IP lines without any plain server give
// NXDOMAIN for the rest, and the upstream IP is known at start only. So the
// entrypoint writes those lines to a servers file, one per allowed name (the
// list renderEntrypoint writes into it) and upstream resolver.
//
// ModeNone has no servers file lines: address=/#/ answers every name. In
// ModeOpen, the servers file holds a plain server=UPSTREAM line per upstream
// resolver, which forwards every name; no name goes to a set.
func renderDnsmasq(p Policy) ([]byte, error) {
	v := dnsmasqViewOf(p)
	for _, d := range p.Domains {
		sets := make([]string, 0, 2*len(d.Ports))
		for _, port := range d.Ports {
			for _, f := range []family{v4, v6} {
				sets = append(sets, fmt.Sprintf("%s#%s#%s#%s", f.nftsetFamily, tableFamily, tableName, allowSet(f, port)))
			}
		}
		v.Domains = append(v.Domains, dnsmasqDomain{Name: d.Name, Sources: d.Sources, Sets: sets})
	}
	return execute("dnsmasq.conf.tmpl", v)
}

// renderDnsmasqCommon renders dnsmasq-common.conf, which every
// dnsmasq.conf reads: what its template uses of dnsmasqViewOf is the same
// for every policy.
func renderDnsmasqCommon() ([]byte, error) {
	return execute("dnsmasq-common.conf.tmpl", dnsmasqViewOf(Policy{}))
}

// dnsmasqViewOf is what the templates of dnsmasq.conf and
// dnsmasq-common.conf see of policy p, its names aside.
func dnsmasqViewOf(p Policy) dnsmasqView {
	return dnsmasqView{
		modeFlags:      flagsOf(p.Mode),
		Header:         Header,
		EntrypointPath: EntrypointPath,
		ServersFile:    serversFile,
		PidFile:        pidFile,
		ResolvConf:     resolvConf,
		FilterAddr:     filterAddr,
		DNSPort:        dnsPort,
		DNSUser:        DNSUser,
		DNSUID:         DNSUID,
		DNSMinPort:     DNSMinPort,
		DNSMaxPort:     DNSMaxPort,
		ProbeName:      ProbeName,
		CommonPath:     DnsmasqCommonPath,
	}
}

// dnsmasqView is what templates/dnsmasq.conf.tmpl sees.
type dnsmasqView struct {
	modeFlags
	Header, EntrypointPath, ServersFile, PidFile, DNSUser string
	CommonPath                                            string
	ResolvConf, FilterAddr, ProbeName                     string
	DNSUID, DNSPort, DNSMinPort, DNSMaxPort               int
	Domains                                               []dnsmasqDomain
}

// dnsmasqDomain is an allowed name and the sets its addresses go to
// (nftset=), as dnsmasq names them: FAMILY#TABLEFAMILY#TABLE#SET.
type dnsmasqDomain struct {
	Name    string
	Sources []string
	Sets    []string
}
