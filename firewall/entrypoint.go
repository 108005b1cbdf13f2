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
// the script shares with rules.nft, dnsmasq.conf and haproxy.cfg, grouped
// by what they name. Nothing of a policy: the script is the same for every
// profile, and reads the profile's policy.bash at start.
type entrypointView struct {
	entrypointFiles
	entrypointTables
	entrypointResolvers
	entrypointProcess
	NeverNameSets string // the never names' sets, as nftset= names them
	NeverDNS      string // neverdns.pl.tmpl rendered
	Gateway       entrypointGateway
	Requests      entrypointRequests
}

// entrypointRequests is what the entrypoint needs of the request endpoint.
type entrypointRequests struct {
	Addr, Spool, Answers, Pid, Name, Hosts string
	Port, UID                              int
	Program                                string // requests.pl.tmpl rendered
}

// entrypointGateway is what the entrypoint needs of the gateway.
type entrypointGateway struct {
	Conf, Common, Socket, GrantsDir, Pid string
	Names, Map                           string // rules.nft's chain of granted names' redirects, and its map of listeners
	V6Env                                string // set for HAProxy when the loopback has ::1
	Forever                              int64
	KeysMap, KeysDone, KeysDir           string
	AnyMap                               string // the grants map of the ports without a listener
	AnyListen, UID                       int    // their listener; HAProxy's uid
}

// entrypointFiles are the files the entrypoint reads and writes.
type entrypointFiles struct {
	Header, Prog, RulesPath, DnsmasqPath, ResolvConf  string
	PolicyPath                                        string
	RunDir, LockFile, ReadyFile, ServersFile, PidFile string
	NamesDir, NamesLock, KeeperPid                    string
}

// entrypointTables are the names of rules.nft's table, chains and sets.
type entrypointTables struct {
	TableFamily, TableName                          string
	OutputChain, InputChain, UpstreamV4, UpstreamV6 string
	HostV4, HostV6, CounterPrefix                   string
	GrantV4, GrantV6, NameLive, NameChain           string
	ProbeTable                                      string // the scratch table of the kernel's features
	Zone, LogGroup, LogSnaplen                      int    // rules.nft's, for the features' probes
}

// entrypointResolvers are the DNS resolvers' addresses, users, files and
// configuration: the filter's, the never filter's and the grant resolver's.
type entrypointResolvers struct {
	FilterAddr                                 string
	DNSPort, DNSMinPort, DNSMaxPort, DNSUID    int
	DNSUser, NeverDNSPid, NeverDNSName         string // the never filter's
	NeverDNSPort                               int
	GrantDNSConf, GrantDNSPid                  string
	GrantDNSPort, GrantDNSPort2, NameGrantsMax int
	GrantMaxSeconds                            int
	GrantDNSBase, NftsetFormat                 string // the grant resolver's configuration
	NftsetV4, NftsetV6                         string // a set in nftset=, without its name
}

// entrypointProcess is the entrypoint's contract with its caller and the
// kernel: environment variables, arguments, exit codes, the kernel setting
// it checks and the packet logger it starts.
type entrypointProcess struct {
	HostAddrsEnv, HealthArg, SetKeyArg        string
	KeysDoneArg                               string
	DeadlineEnv, AgentUIDEnv, DeadlineStayEnv string
	DeadlineExit                              int
	PortStart, PortStartProc, PortStartWant   string
	UlogdPath, LogUser                        string
}

// renderEntrypoint renders the program installed at EntrypointPath, the
// same for every policy: the policy reaches it as policy.bash
// (renderPolicyData).
func renderEntrypoint() ([]byte, error) {
	prog, err := RequestsProgram()
	if err != nil {
		return nil, err
	}
	v := entrypointView{
		entrypointFiles:     entrypointFileNames(),
		entrypointTables:    entrypointTableNames(),
		entrypointResolvers: entrypointResolverSettings(),
		entrypointProcess:   entrypointProcessContract(),
		Gateway: entrypointGateway{Conf: GatewayConfigPath, Common: GatewayCommonPath, Socket: GatewaySocket,
			GrantsDir: GatewayGrantsDir, Pid: gatewayPid, Forever: gatewayForever,
			Names: gatewayNames, Map: gatewayMap, V6Env: gatewayV6Env,
			KeysMap: GatewayKeysMap, KeysDone: keysDone, KeysDir: GatewayKeysDir,
			AnyMap: gatewayGrantsAny, AnyListen: GatewayGrantListen, UID: GatewayUID},
		Requests: entrypointRequests{Addr: RequestAddr, Spool: RequestSpool, Answers: RequestAnswers,
			Pid: requestPid, Name: requestName, Hosts: requestHosts, Port: RequestPort, UID: RequestUID, Program: string(prog)},
	}
	v.NeverNameSets = fmt.Sprintf("%s%s,%s%s", v.NftsetV4, neverNameV4, v.NftsetV6, neverNameV6)
	never, err := execute("neverdns.pl.tmpl", v)
	if err != nil {
		return nil, err
	}
	v.NeverDNS = string(never)
	return execute("entrypoint.sh.tmpl", v)
}

// entrypointFileNames returns the entrypoint's files.
func entrypointFileNames() entrypointFiles {
	return entrypointFiles{
		Header:      Header,
		Prog:        path.Base(EntrypointPath),
		RulesPath:   RulesPath,
		DnsmasqPath: DnsmasqPath,
		PolicyPath:  PolicyPath,
		ResolvConf:  resolvConf,
		RunDir:      runDir,
		LockFile:    lockFile,
		ReadyFile:   readyFile,
		ServersFile: serversFile,
		PidFile:     pidFile,
		NamesDir:    namesDir,
		NamesLock:   namesLock,
		KeeperPid:   keeperPid,
	}
}

// entrypointTableNames returns the names rules.nft gives its table, chains
// and sets.
func entrypointTableNames() entrypointTables {
	return entrypointTables{
		TableFamily:   tableFamily,
		TableName:     tableName,
		OutputChain:   outputChain,
		InputChain:    inputChain,
		UpstreamV4:    upstreamV4,
		UpstreamV6:    upstreamV6,
		HostV4:        hostV4,
		HostV6:        hostV6,
		CounterPrefix: counterPrefix,
		GrantV4:       GrantSetV4,
		GrantV6:       GrantSetV6,
		NameLive:      NameLiveSet,
		NameChain:     nameChain,
		ProbeTable:    tableFamily + " " + probeTable,
		Zone:          dnsZone,
		LogGroup:      LogGroup,
		LogSnaplen:    logSnaplen,
	}
}

// entrypointResolverSettings returns the settings of the three resolvers.
func entrypointResolverSettings() entrypointResolvers {
	return entrypointResolvers{
		FilterAddr:      filterAddr,
		DNSPort:         dnsPort,
		DNSMinPort:      DNSMinPort,
		DNSMaxPort:      DNSMaxPort,
		DNSUID:          DNSUID,
		DNSUser:         DNSUser,
		NeverDNSPid:     neverDNSPid,
		NeverDNSName:    neverDNSName,
		NeverDNSPort:    NeverDNSPort,
		GrantDNSConf:    grantDNSCfg,
		GrantDNSPid:     grantDNSPid,
		GrantDNSPort:    GrantDNSPort,
		GrantDNSPort2:   GrantDNSPort + 1,
		NameGrantsMax:   NameGrantsMax,
		GrantMaxSeconds: GrantMaxSeconds,
		GrantDNSBase:    grantDNSBase(),
		NftsetFormat:    "nftset=/%s/%s\\n",
		NftsetV4:        fmt.Sprintf("%s#%s#%s#", v4.nftsetFamily, tableFamily, tableName),
		NftsetV6:        fmt.Sprintf("%s#%s#%s#", v6.nftsetFamily, tableFamily, tableName),
	}
}

// entrypointProcessContract returns the entrypoint's environment,
// arguments, exit code, kernel setting and packet logger.
func entrypointProcessContract() entrypointProcess {
	return entrypointProcess{
		HostAddrsEnv:    HostAddrsEnv,
		HealthArg:       healthArg,
		SetKeyArg:       SetKeyArg,
		KeysDoneArg:     KeysDoneArg,
		DeadlineEnv:     DeadlineEnv,
		AgentUIDEnv:     AgentUIDEnv,
		DeadlineStayEnv: DeadlineStayEnv,
		DeadlineExit:    DeadlineExit,
		PortStart:       portStart.Key,
		PortStartProc:   "/proc/sys/" + strings.ReplaceAll(portStart.Key, ".", "/"),
		PortStartWant:   portStart.Value,
		UlogdPath:       UlogdPath,
		LogUser:         LogUser,
	}
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
