package sandbox

import (
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/settings"
)

// ComposeEnv is the environment of docker compose: the caller's, with
// firewall.HostAddrsEnv naming the host's addresses unless the caller set
// it. The compose file passes it to the egress service, whose firewall
// refuses those addresses in every profile unless network.cidrs lists them:
// the host serves on each, and under the open profile a public one would
// pass as any other.
func ComposeEnv(environ []string, interfaceAddrs func() ([]net.Addr, error)) []string {
	for _, kv := range environ {
		if strings.HasPrefix(kv, firewall.HostAddrsEnv+"=") {
			return environ
		}
	}
	return append(environ, firewall.HostAddrsEnv+"="+strings.Join(HostAddrs(interfaceAddrs), " "))
}

// HostAddrs lists the host's unicast addresses, loopback and link-local
// aside (the firewall refuses those ranges whole).
func HostAddrs(interfaceAddrs func() ([]net.Addr, error)) []string {
	addrs, err := interfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if ip = ip.Unmap(); ok && ip.IsGlobalUnicast() {
			out = append(out, ip.String())
		}
	}
	return out
}

// BuildNPMRC is the .npmrc that builds get as a secret: the registry in
// use (the settings', else npm's configuration as the working directory
// sees it) with the credential npm's configuration holds for it; "" when
// it holds none.
func BuildNPMRC(s settings.Settings, getenv func(string) string) string {
	return npm.AuthFromConfig(s.NPMRegistry("", getenv), "", getenv).NPMRC
}

// Environ is ComposeEnv of this process for the docker compose
// command named, with what that command needs of the user's files: up (the
// one command that creates containers, and so the one that reads the values
// of secrets) gets the variables of the secrets file that the environment
// does not set; up and build (the commands that build images) get the
// user's settings (mirrors, registries) and the build secrets
// (settings.BuildSecrets: the npm credential, the CA). Other commands read neither file:
// a bad one cannot keep the sandbox from stopping. Environ reads the
// settings file for each up or build; a command that loaded its settings
// passes them with EnvironWith.
func Environ(command string) ([]string, error) {
	return environ(command, nil)
}

// EnvironWith is Environ with the settings s that the command loaded
// already (settings.LoadUser): the file is read once per command.
func EnvironWith(s settings.Settings) func(command string) ([]string, error) {
	return func(command string) ([]string, error) { return environ(command, &s) }
}

// environ is Environ with the settings s, or those of the settings file
// when s is nil.
func environ(command string, s *settings.Settings) ([]string, error) {
	env := ComposeEnv(os.Environ(), net.InterfaceAddrs)
	if command != "up" && command != "build" {
		return env, nil
	}
	if s == nil {
		loaded, err := settings.Load(settings.Path(), os.Getenv)
		if err != nil {
			return nil, err
		}
		s = &loaded
	}
	env, err := s.BuildSecrets(s.BuildEnv(env), BuildNPMRC(*s, os.Getenv))
	if err != nil {
		return nil, err
	}
	if command != "up" {
		return env, nil
	}
	secrets, err := ReadSecrets(SecretsPath())
	if err != nil {
		return nil, err
	}
	return WithSecrets(env, secrets), nil
}
