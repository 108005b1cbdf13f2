package firewall

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// withKeys returns the rich policy with the gateway and three keys: two
// over TLS to allowed names, one in plain HTTP to a private address that a
// CIDR entry lists.
func withKeys() Policy {
	p := withGateway(policies["rich"])
	p.Keys = []Key{
		{Name: "OPENAI_API_KEY", Header: "authorization", Bearer: true, Host: "example.test", Port: 8443},
		{Name: "ANTHROPIC_API_KEY", Header: "x-api-key", Host: "registry.acme.test", Port: 443},
		{Name: "LOCAL_KEY", Header: "authorization", Bearer: true, Host: "10.1.2.3", Port: 5432},
	}
	return p
}

// TestKeysRender: each key has a listener on loopback below 1024, in the
// order of the names; its frontend drops every credential header, sets its
// own from the keys map and goes to its provider, over TLS with the
// certificate verified for a name, in plain HTTP for a private address.
func TestKeysRender(t *testing.T) {
	files := mustRender(t, withKeys())
	cfg := string(files[gatewayFile])
	listen := KeyListeners(withKeys().Keys)
	for name, want := range map[string]int{"ANTHROPIC_API_KEY": 1000, "LOCAL_KEY": 1001, "OPENAI_API_KEY": 1002} {
		if listen[name] != want {
			t.Errorf("%s listens on %d, want %d", name, listen[name], want)
		}
	}
	frontends := strings.Split(cfg, "\nfrontend key_")[1:]
	if len(frontends) != 3 {
		t.Fatalf("haproxy.cfg has %d key frontends, want 3:\n%s", len(frontends), cfg)
	}
	for _, f := range frontends {
		for _, h := range KeyHeaders {
			if !strings.Contains(f, "\thttp-request del-header "+h+"\n") {
				t.Errorf("frontend key_%s keeps the agent's %s header", f[:strings.Index(f, "\n")], h)
			}
		}
	}
	for _, want := range []string{
		"frontend key_ANTHROPIC_API_KEY\n\tmode http\n\tbind 127.0.0.1:1000\n",
		"http-request set-var(txn.which) str(ANTHROPIC_API_KEY) if !{ var(txn.which) -m found } { str(ANTHROPIC_API_KEY),map(" + GatewayKeysMap + ") -m found }\n",
		"http-request set-var(txn.key) var(txn.which),map(" + GatewayKeysMap + ")\n",
		"http-request set-header x-api-key %[var(txn.key)] if { var(txn.which) -m str ANTHROPIC_API_KEY }\n\thttp-request set-header host registry.acme.test\n",
		"do-resolve(txn.addr,filter,ipv4) str(registry.acme.test)",
		"server up 0.0.0.0:0 ssl verify required ca-file " + GatewayCAFile + " sni str(registry.acme.test) verifyhost registry.acme.test\n",
		"bind 127.0.0.1:1002\n",
		"http-request set-header authorization \"Bearer %[var(txn.key)]\" if { var(txn.which) -m str OPENAI_API_KEY }\n\thttp-request set-header host example.test:8443\n",
		"set-dst-port int(8443)",
		"sni str(example.test) verifyhost example.test\n",
		"http-request set-dst str(10.1.2.3)\n\thttp-request set-dst-port int(5432)\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
	local := cfg[strings.Index(cfg, "\nbackend key_LOCAL_KEY"):]
	if line := local[:strings.Index(local[1:], "\n\n")+2]; strings.Contains(line, "ssl") || !strings.Contains(line, "server up 0.0.0.0:0\n") {
		t.Errorf("the plain-HTTP key's backend: %q", line)
	}
	entry := string(files[entrypointFile])
	if out := sourceEntrypointOf(t, withKeys(), `echo "${GATEWAY_KEYS[*]}"`); out != "ANTHROPIC_API_KEY LOCAL_KEY OPENAI_API_KEY\n" {
		t.Errorf("the entrypoint takes the keys %q", out)
	}
	for _, want := range []string{
		"readonly GATEWAY_KEYS_MAP=" + GatewayKeysMap + "\n",
		`"2:set-key") no_gateway && set_key "$2" ;;`,
	} {
		if !strings.Contains(entry, want) {
			t.Errorf("entrypoint.sh lacks %q", want)
		}
	}
	if strings.Contains(string(mustRender(t, withGateway(policies["rich"]))[gatewayFile]), "frontend key_") {
		t.Error("haproxy.cfg has a key frontend without keys")
	}
}

// TestKeysTools: haproxy -c accepts the configuration with keys.
func TestKeysTools(t *testing.T) {
	files := mustRender(t, withKeys())
	dir := writeFiles(t, files)
	if _, err := os.Stat(GatewayCAFile); err != nil {
		testenv.Unavailable(t, "haproxy -c reads the CA bundle, and "+GatewayCAFile+" is missing (Debian's ca-certificates)")
	}
	checkHaproxy(t, files, nil)
	run(t, "", requireTool(t, "bash", false), "-n", filepath.Join(dir, entrypointFile))
}

// TestKeysRefused: a key the policy cannot serve is an error naming it.
func TestKeysRefused(t *testing.T) {
	good := Key{Name: "K", Header: "x-api-key", Host: "registry.acme.test", Port: 443}
	with := func(f func(*Key)) Policy {
		p := withGateway(policies["rich"])
		k := good
		f(&k)
		p.Keys = []Key{k}
		return p
	}
	cases := map[string]struct {
		p    Policy
		want string
	}{
		"no gateway":           {Policy{Domains: policies["rich"].Domains, Keys: []Key{good}}, "keys need the gateway"},
		"name not allowed":     {with(func(k *Key) { k.Host = "other.test" }), "other.test is not allowed on port 443"},
		"port not allowed":     {with(func(k *Key) { k.Port = 8443 }), "registry.acme.test is not allowed on port 8443"},
		"public address":       {with(func(k *Key) { k.Host = "198.18.0.1" }), "public address"},
		"address in no CIDR":   {with(func(k *Key) { k.Host = "10.2.0.1"; k.Port = 5432 }), "10.2.0.1 port 5432 is in no CIDR entry"},
		"header":               {with(func(k *Key) { k.Header = "cookie" }), `header "cookie"`},
		"name":                 {with(func(k *Key) { k.Name = "A B" }), `key "A B"`},
		"no port":              {with(func(k *Key) { k.Port = 0 }), "no port"},
		"twice":                {Policy{Domains: policies["rich"].Domains, Gateway: true, Keys: []Key{good, good}}, "listed twice"},
		"a name not a host":    {with(func(k *Key) { k.Host = "a b" }), `key "K"`},
		"uppercase host names": {with(func(k *Key) { k.Host = "Registry.acme.test" }), `key "K"`},
	}
	for name, c := range cases {
		_, err := Render(c.p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}

// TestValidCredential: one word of the characters of keys and tokens.
func TestValidCredential(t *testing.T) {
	for _, v := range []string{"sk-ant-api03-AbC_d", "AIzaSyA0", "a.b.c+/=~"} {
		if !ValidCredential(v) {
			t.Errorf("%q refused", v)
		}
	}
	for _, v := range []string{"", "a b", "a;b", "a\nb", "é", strings.Repeat("a", 4097)} {
		if ValidCredential(v) {
			t.Errorf("%q accepted", v)
		}
	}
}

// TestKeysOneBase: the keys of one Base (claude's API key and its
// subscription token, both read from ANTHROPIC_BASE_URL) share a listener
// and a frontend; the first of them handed over goes upstream with its own
// header; a Base with two providers is an error.
func TestKeysOneBase(t *testing.T) {
	p := withGateway(policies["rich"])
	p.Keys = []Key{
		{Name: "TOKEN", Header: "authorization", Bearer: true, Host: "registry.acme.test", Port: 443, Base: "ANTHROPIC_BASE_URL"},
		{Name: "API_KEY", Header: "x-api-key", Host: "registry.acme.test", Port: 443, Base: "ANTHROPIC_BASE_URL"},
		{Name: "OTHER", Header: "x-api-key", Host: "registry.acme.test", Port: 443},
	}
	listen := KeyListeners(p.Keys)
	if listen["TOKEN"] != 1000 || listen["API_KEY"] != 1000 || listen["OTHER"] != 1001 {
		t.Errorf("listeners %v, want the Base's 1000 for both of it, 1001 for OTHER", listen)
	}
	cfg := string(mustRender(t, p)[gatewayFile])
	if n := strings.Count(cfg, "\nfrontend key_"); n != 2 {
		t.Errorf("%d key frontends, want 2:\n%s", n, cfg)
	}
	front := cfg[strings.Index(cfg, "frontend key_ANTHROPIC_BASE_URL\n"):]
	front = front[:strings.Index(front, "\nbackend ")]
	token := strings.Index(front, "set-var(txn.which) str(TOKEN) if !{ var(txn.which) -m found } { str(TOKEN),map(")
	api := strings.Index(front, "set-var(txn.which) str(API_KEY) if !{ var(txn.which) -m found } { str(API_KEY),map(")
	if token < 0 || api < token {
		t.Errorf("the Base's frontend does not try TOKEN, then API_KEY:\n%s", front)
	}
	for _, want := range []string{
		"bind 127.0.0.1:1000\n",
		"http-request set-header authorization \"Bearer %[var(txn.key)]\" if { var(txn.which) -m str TOKEN }\n",
		"http-request set-header x-api-key %[var(txn.key)] if { var(txn.which) -m str API_KEY }\n",
		"the gateway holds no TOKEN, API_KEY:",
	} {
		if !strings.Contains(front, want) {
			t.Errorf("the Base's frontend lacks %q:\n%s", want, front)
		}
	}
	p.Keys[1].Host = "example.test"
	p.Keys[1].Port = 8443
	if _, err := Render(p); err == nil || !strings.Contains(err.Error(), "one provider per base") {
		t.Errorf("a Base with two providers: %v", err)
	}
}

// TestPackagesHaveCABundle: the gateway verifies providers against
// GatewayCAFile, which Debian's ca-certificates ships (bookworm-slim has
// none): the egress image installs it.
func TestPackagesHaveCABundle(t *testing.T) {
	if !slices.Contains(Packages, "ca-certificates") || !slices.IsSorted(Packages) {
		t.Errorf("firewall.Packages %q: want ca-certificates (for %s), sorted", Packages, GatewayCAFile)
	}
}

// fetchBadPorts are the ports below 1024 that the Fetch standard's "bad
// port" list blocks (fetch.spec.whatwg.org, "port blocking"): Node's
// fetch (Gemini CLI's) refuses a URL with one ("bad port") before it
// connects.
var fetchBadPorts = []int{1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95,
	101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465,
	512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995}

// TestKeyListenersFetchCanReach: no key's listener, the agent's base URL,
// is a port that fetch refuses (the e2e's Gemini CLI failed with "fetch
// failed ... bad port" on 990).
func TestKeyListenersFetchCanReach(t *testing.T) {
	for port := GatewayKeyListenBase; port < GatewayKeyListenBase+GatewayKeyMax; port++ {
		if slices.Contains(fetchBadPorts, port) {
			t.Errorf("key listener port %d is one of fetch's bad ports", port)
		}
	}
	if GatewayKeyListenBase+GatewayKeyMax != 1024 {
		t.Errorf("the keys' listeners end at %d, want 1023 (below 1024, where the agent cannot bind)", GatewayKeyListenBase+GatewayKeyMax-1)
	}
}
