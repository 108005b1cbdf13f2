package firewall

import (
	"path"
	"strings"
)

// Run-time paths and addresses of the entrypoint, shared with dnsmasq.conf.
const (
	resolvConf  = "/etc/resolv.conf"
	runDir      = "/run/agentbox"
	lockFile    = runDir + "/lock"
	readyFile   = runDir + "/ready"
	pidFile     = runDir + "/dnsmasq.pid"
	serversFile = runDir + "/servers.conf"
	filterAddr  = "127.0.0.1" // where dnsmasq listens
	dnsPort     = 53
)

// entrypointView is what templates/entrypoint.sh.tmpl sees: the constants
// the script shares with rules.nft and dnsmasq.conf, and the allowed names.
type entrypointView struct {
	modeFlags
	Header, Prog, RulesPath, DnsmasqPath, ResolvConf  string
	RunDir, LockFile, ReadyFile, ServersFile, PidFile string
	FilterAddr, TableFamily, TableName                string
	OutputChain, InputChain, UpstreamV4, UpstreamV6   string
	CounterPrefix, HealthArg                          string
	PortStart, PortStartProc, PortStartWant           string
	DNSPort, DNSMinPort, DNSUID, DeadlineExit         int
	DeadlineEnv, AgentUIDEnv, DeadlineStayEnv         string
	GrantV4, GrantV6                                  string
	GrantMaxSeconds                                   int
	UlogdPath, LogUser                                string
	Names                                             []string // sorted
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
		CounterPrefix:   counterPrefix,
		HealthArg:       healthArg,
		PortStart:       portStart.Key,
		PortStartProc:   "/proc/sys/" + strings.ReplaceAll(portStart.Key, ".", "/"),
		PortStartWant:   portStart.Value,
		DNSPort:         dnsPort,
		DNSMinPort:      DNSMinPort,
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
	}
	for _, d := range p.Domains {
		v.Names = append(v.Names, d.Name)
	}
	return execute("entrypoint.sh.tmpl", v)
}
