package firewall

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/validate"
)

// Key is a model credential that the gateway holds instead of the agent
// (docs/gateway.md, "Keys outside the sandbox"). The agent sends its
// requests in plain HTTP to the key's listener on loopback (KeyListeners)
// with a placeholder; HAProxy drops every credential header the request
// carries, sets Header to the credential, which the entrypoint's set-key
// command put into its keys map (the credential never reaches a file, an
// environment or a command line), and forwards the request to Host:Port.
type Key struct {
	// Name is the variable that holds the credential on the host, e.g.
	// ANTHROPIC_API_KEY: the credential's entry in the keys map.
	Name string
	// Header carries the credential upstream, lower-case: one of
	// KeyHeaders.
	Header string
	// Bearer: the header's value is "Bearer " and the credential.
	Bearer bool
	// Host is the provider: a name the policy allows on Port, reached over
	// TLS with its certificate verified against the system's CA bundle
	// (SNI, verified name and Host header: Host); or an address in a
	// special range (private, loopback, ...) that a CIDR entry lists on
	// Port, reached in plain HTTP: a credential never crosses a public
	// network in the clear.
	Host string
	Port uint16
	// Base is the key's frontend: the keys of one Base share one listener
	// (one base URL of the agent's: claude reads ANTHROPIC_BASE_URL for its
	// API key and its subscription token alike) and one provider. Of the
	// keys of a Base that were handed over, the first in Policy.Keys goes
	// upstream. "": Name, a Base of its own.
	Base string
}

// base is k's frontend.
func (k Key) base() string {
	if k.Base != "" {
		return k.Base
	}
	return k.Name
}

// KeyHeaders are the headers that carry a model credential: the gateway
// removes each of them from the agent's request before it sets its own.
var KeyHeaders = []string{"api-key", "authorization", "x-api-key", "x-goog-api-key"}

// The keys' listeners: GatewayKeyListenBase for the first Base (by
// name), one above for the next; on 127.0.0.1 below 1024, where the agent
// cannot bind, and from 1000 on: the Fetch standard blocks 989, 990, 993
// and 995 ("bad port"), and Node's fetch (Gemini CLI's) refuses a base URL
// there. The ports of allowed names' listeners stay below them (the agent
// never dials those: the ruleset redirects to them).
const (
	GatewayKeyListenBase = 1000
	GatewayKeyMax        = 1024 - GatewayKeyListenBase
	// GatewayKeysMap is the keys map: "NAME CREDENTIAL" lines, in HAProxy's
	// memory only (the file stays empty; set-key adds through the runtime
	// API).
	GatewayKeysMap = GatewayGrantsDir + "/keys.map"
	// GatewayCAFile is the system's CA bundle (Debian's ca-certificates):
	// the gateway verifies the providers' certificates against it.
	GatewayCAFile = "/etc/ssl/certs/ca-certificates.crt"
	// SetKeyArg is the entrypoint's command that reads a credential from
	// its standard input: `docker exec -i EGRESS ENTRYPOINT set-key NAME`.
	SetKeyArg = "set-key"
	// GatewayKeysDir is where a task on Kubernetes has its keys: a Secret
	// mounted only in the egress container, one file per name, which the
	// entrypoint hands to HAProxy before it says it is ready.
	GatewayKeysDir = "/etc/agentbox-keys"
	// KeysDoneArg is the entrypoint's command that says that agentbox has
	// handed over every key it has: from then on each key's listener
	// answers KeysReadyPath with 200 (a task's agent waits for it).
	KeysDoneArg = "keys-done"
	// KeysReadyPath is the path on a key's listener that answers 200 once
	// the keys are handed over, 503 before; it goes nowhere upstream.
	KeysReadyPath = "/.agentbox/keys-ready"
	// keysDone is the keys map's entry that keys-done adds: no variable's
	// name starts with a dot.
	keysDone = ".done"
)

// KeyListeners returns each key's listener port by Name: its Base's, the
// Bases in sorted order from GatewayKeyListenBase on.
func KeyListeners(keys []Key) map[string]int {
	var bases []string
	for _, k := range keys {
		bases = append(bases, k.base())
	}
	slices.Sort(bases)
	bases = slices.Compact(bases)
	out := make(map[string]int, len(keys))
	for _, k := range keys {
		out[k.Name] = GatewayKeyListenBase + slices.Index(bases, k.base())
	}
	return out
}

// KeyURL is the base URL the agent gets for a key: its listener, then path
// (the provider's base path, e.g. "/v1", or "").
func KeyURL(listen int, path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(listen) + path
}

// ValidCredential says whether a credential can go into the keys map: one
// word of the characters of API keys and tokens (letters, digits and
// -._~+/=), at most 4096 bytes. Nothing else reaches the runtime API, whose
// commands a space, a semicolon or a newline would change.
func ValidCredential(v string) bool {
	if v == "" || len(v) > 4096 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~+/=", c)) {
			return false
		}
	}
	return true
}

// checkKeys returns copies of the keys sorted by Base (in their order
// within one), or an error for each that the normalized policy p cannot
// serve.
func checkKeys(keys []Key, p Policy) ([]Key, []error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if !p.Gateway {
		return nil, []error{errors.New("keys need the gateway (an allowlist with names)")}
	}
	out := slices.Clone(keys)
	slices.SortStableFunc(out, func(a, b Key) int { return strings.Compare(a.base(), b.base()) })
	if last := KeyListeners(out)[out[len(out)-1].Name]; last-GatewayKeyListenBase >= GatewayKeyMax {
		return nil, []error{fmt.Errorf("the gateway serves at most %d base URLs of keys, not %d", GatewayKeyMax, last-GatewayKeyListenBase+1)}
	}
	var errs []error
	seen := map[string]bool{}
	for i, k := range out {
		if seen[k.Name] {
			errs = append(errs, fmt.Errorf("key %q: listed twice", k.Name))
		}
		seen[k.Name] = true
		if err := checkKey(k, p); err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", k.Name, err))
		}
		if i > 0 && out[i-1].base() == k.base() && (out[i-1].Host != k.Host || out[i-1].Port != k.Port) {
			errs = append(errs, fmt.Errorf("key %q: base %s goes to %s port %d, and %s to %s port %d: one provider per base", k.Name, k.base(), out[i-1].Host, out[i-1].Port, out[i-1].Name, k.Host, k.Port))
		}
	}
	return out, errs
}

// CheckKey says why policy p cannot serve key k, or nil.
func CheckKey(k Key, p Policy) error {
	n, err := normalize(Policy{Mode: p.Mode, Domains: p.Domains, CIDRs: p.CIDRs, Gateway: p.Gateway})
	if err != nil {
		return err
	}
	return checkKey(k, n)
}

// checkKey checks one key against the normalized policy p.
func checkKey(k Key, p Policy) error {
	if err := validate.EnvName(k.Name); err != nil {
		return err
	}
	if !slices.Contains(KeyHeaders, k.Header) {
		return fmt.Errorf("header %q, valid headers are %q", k.Header, KeyHeaders)
	}
	if k.Port == 0 {
		return errors.New("no port")
	}
	if a, err := netip.ParseAddr(k.Host); err == nil {
		return checkPlainUpstream(a, k.Port, p)
	}
	if err := checkName(k.Host); err != nil {
		return err
	}
	for _, d := range p.Domains {
		if (k.Host == d.Name || strings.HasSuffix(k.Host, "."+d.Name)) && slices.Contains(d.Ports, k.Port) {
			return nil
		}
	}
	return fmt.Errorf("%s is not allowed on port %d", k.Host, k.Port)
}

// checkPlainUpstream: a plain-HTTP upstream is an address in a special
// range that a CIDR entry lists on port.
func checkPlainUpstream(a netip.Addr, port uint16, p Policy) error {
	a = a.Unmap()
	special := false
	for _, s := range SpecialRanges() {
		special = special || s.Prefix.Contains(a)
	}
	if !special {
		return fmt.Errorf("%s is a public address: the gateway sends a key in plain HTTP only to a private or local one, and over TLS to a name", a)
	}
	for _, c := range p.CIDRs {
		if c.Prefix.Contains(a) && slices.Contains(c.Ports, port) {
			return nil
		}
	}
	return fmt.Errorf("%s port %d is in no CIDR entry", a, port)
}

// gatewayFront is one frontend of keys (a Base) as
// templates/haproxy.cfg.tmpl sees it.
type gatewayFront struct {
	Base     string
	Keys     []Key // in order: the first handed over goes upstream
	Names    string
	Host     string
	Port     uint16
	Listen   int
	TLS      bool
	HostPort string // the Host header: Host, with the port unless 443 (TLS) or 80
}

// gatewayKeys returns the normalized policy's keys by frontend, with their
// listeners.
func gatewayKeys(p Policy) []gatewayFront {
	listen := KeyListeners(p.Keys)
	var out []gatewayFront
	for _, k := range p.Keys {
		if n := len(out); n > 0 && out[n-1].Base == k.base() {
			out[n-1].Keys = append(out[n-1].Keys, k)
			out[n-1].Names += ", " + k.Name
			continue
		}
		_, err := netip.ParseAddr(k.Host)
		g := gatewayFront{Base: k.base(), Keys: []Key{k}, Names: k.Name, Host: k.Host, Port: k.Port,
			Listen: listen[k.Name], TLS: err != nil, HostPort: k.Host}
		if g.TLS && k.Port != 443 || !g.TLS && k.Port != 80 {
			g.HostPort = k.Host + ":" + strconv.Itoa(int(k.Port))
			if !g.TLS && strings.Contains(k.Host, ":") {
				g.HostPort = "[" + k.Host + "]:" + strconv.Itoa(int(k.Port))
			}
		}
		out = append(out, g)
	}
	return out
}
