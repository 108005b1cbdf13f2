package firewall

import (
	"fmt"
	"path"
	"strings"
)

// Run-time paths and addresses of the entrypoint, shared with dnsmasq.conf.
const (
	resolvConf   = "/etc/resolv.conf"
	runDir       = "/run/agentbox"
	lockFile     = runDir + "/lock"
	readyFile    = runDir + "/ready"
	pidFile      = runDir + "/dnsmasq.pid"
	serversFile  = runDir + "/servers.conf"
	namesDir     = runDir + "/names" // a file per granted name's slot
	namesLock    = runDir + "/names.lock"
	keeperPid    = runDir + "/keeper.pid"
	grantDNSCfg  = runDir + "/grants-dnsmasq"  // .conf: its names; -PORT.conf: an instance's
	grantDNSPid  = runDir + "/grants-dnsmasq-" // then PORT.pid
	neverDNSPid  = runDir + "/never-dns.pid"   // the never filter's
	neverDNSName = "agentbox-never-dns"        // its process's name ($0)
	filterAddr   = "127.0.0.1"                 // where dnsmasq listens
	dnsPort      = 53
	// probeTable is the scratch table in which the entrypoint tries what
	// the firewall needs of the kernel; each transaction that creates it
	// deletes it, so it never shows.
	probeTable = tableName + "_probe"
)

// entrypointView is what templates/entrypoint.sh.tmpl sees: the constants
// the script shares with rules.nft and dnsmasq.conf, and the allowed names.
type entrypointView struct {
	modeFlags
	Header, Prog, RulesPath, DnsmasqPath, ResolvConf  string
	RunDir, LockFile, ReadyFile, ServersFile, PidFile string
	FilterAddr, TableFamily, TableName                string
	OutputChain, InputChain, UpstreamV4, UpstreamV6   string
	HostV4, HostV6, HostAddrsEnv                      string
	CounterPrefix, HealthArg                          string
	PortStart, PortStartProc, PortStartWant           string
	DNSPort, DNSMinPort, DNSMaxPort, DNSUID           int
	DeadlineExit                                      int
	DNSUser, NeverDNSPid, NeverDNSName                string // the never filter's
	NeverDNSPort                                      int
	NeverFilter                                       bool // whether it runs
	DeadlineEnv, AgentUIDEnv, DeadlineStayEnv         string
	GrantV4, GrantV6                                  string
	GrantMaxSeconds                                   int
	UlogdPath, LogUser                                string
	NameLive, NameChain, NamesDir, NamesLock          string
	KeeperPid, GrantDNSConf, GrantDNSPid              string
	GrantDNSPort, GrantDNSPort2, NameGrantsMax        int
	GrantDNSBase, NftsetFormat                        string   // the grant resolver's configuration
	NftsetV4, NftsetV6                                string   // a set in nftset=, without its name
	Names                                             []string // sorted
	NeverNames                                        []string // sorted
	NeverNameSets                                     string   // their sets, as nftset= names them
	ProbeTable                                        string   // the scratch table of the kernel's features
	Zone, LogGroup, LogSnaplen                        int      // rules.nft's, for the features' probes
}

// renderEntrypoint renders the program installed at EntrypointPath for a
// normalized policy. The policy reaches it as the list of allowed names and
// the mode, which says what the servers file holds.
func renderEntrypoint(p Policy) ([]byte, error) {
	v := entrypointView{
		modeFlags:       flagsOf(p.Mode),
		Header:          Header,
		Prog:            path.Base(EntrypointPath),
		RulesPath:       RulesPath,
		DnsmasqPath:     DnsmasqPath,
		ResolvConf:      resolvConf,
		RunDir:          runDir,
		LockFile:        lockFile,
		ReadyFile:       readyFile,
		ServersFile:     serversFile,
		PidFile:         pidFile,
		FilterAddr:      filterAddr,
		TableFamily:     tableFamily,
		TableName:       tableName,
		OutputChain:     outputChain,
		InputChain:      inputChain,
		UpstreamV4:      upstreamV4,
		UpstreamV6:      upstreamV6,
		HostV4:          hostV4,
		HostV6:          hostV6,
		HostAddrsEnv:    HostAddrsEnv,
		CounterPrefix:   counterPrefix,
		HealthArg:       healthArg,
		PortStart:       portStart.Key,
		PortStartProc:   "/proc/sys/" + strings.ReplaceAll(portStart.Key, ".", "/"),
		PortStartWant:   portStart.Value,
		DNSPort:         dnsPort,
		DNSMinPort:      DNSMinPort,
		DNSMaxPort:      DNSMaxPort,
		DNSUser:         DNSUser,
		NeverDNSPid:     neverDNSPid,
		NeverDNSName:    neverDNSName,
		NeverDNSPort:    NeverDNSPort,
		DNSUID:          DNSUID,
		DeadlineExit:    DeadlineExit,
		DeadlineEnv:     DeadlineEnv,
		DeadlineStayEnv: DeadlineStayEnv,
		AgentUIDEnv:     AgentUIDEnv,
		GrantV4:         GrantSetV4,
		GrantV6:         GrantSetV6,
		GrantMaxSeconds: GrantMaxSeconds,
		UlogdPath:       UlogdPath,
		LogUser:         LogUser,
		NameLive:        NameLiveSet,
		NameChain:       nameChain,
		NamesDir:        namesDir,
		NamesLock:       namesLock,
		KeeperPid:       keeperPid,
		GrantDNSConf:    grantDNSCfg,
		GrantDNSPid:     grantDNSPid,
		GrantDNSPort:    GrantDNSPort,
		GrantDNSPort2:   GrantDNSPort + 1,
		NameGrantsMax:   NameGrantsMax,
		GrantDNSBase:    grantDNSBase(),
		NftsetFormat:    "nftset=/%s/%s\\n",
		NftsetV4:        fmt.Sprintf("%s#%s#%s#", v4.nftsetFamily, tableFamily, tableName),
		NftsetV6:        fmt.Sprintf("%s#%s#%s#", v6.nftsetFamily, tableFamily, tableName),
		ProbeTable:      tableFamily + " " + probeTable,
		Zone:            dnsZone,
		LogGroup:        LogGroup,
		LogSnaplen:      logSnaplen,
	}
	for _, d := range p.Domains {
		v.Names = append(v.Names, d.Name)
	}
	v.NeverNames = p.NeverNames
	// The never filter serves the grant resolver, which asks upstream
	// resolvers in the allowlist mode only.
	v.NeverFilter = len(p.NeverNames) > 0 && p.Mode != ModeNone && p.Mode != ModeOpen
	v.NeverNameSets = fmt.Sprintf("%s%s,%s%s", v.NftsetV4, neverNameV4, v.NftsetV6, neverNameV6)
	return execute("entrypoint.sh.tmpl", v)
}

// grantDNSBase is the grant resolver's configuration before its port, pid
// file and granted names, which the entrypoint adds (port=, pid-file=,
// server= and nftset= lines): dnsmasq.conf's listening, user, source ports
// and rebind protection, without a cache (the filter resolver keeps one) or
// a query log (the filter's shows every query it forwards here).
func grantDNSBase() string {
	return strings.Join([]string{
		"listen-address=" + filterAddr,
		"bind-interfaces",
		"user=" + DNSUser,
		"group=" + DNSUser,
		fmt.Sprintf("min-port=%d", DNSMinPort),
		fmt.Sprintf("max-port=%d", DNSMaxPort),
		"no-resolv", "no-hosts", "no-poll", "stop-dns-rebind",
		"cache-size=0",
		"log-facility=-",
		"address=/#/",
	}, "\n")
}
