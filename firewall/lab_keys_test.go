package firewall_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/connlog"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// The keys of the lab (docs/gateway.md, "Keys outside the sandbox"): each
// is held by the gateway, which sends it to a TLS server of the lab's
// internet that model.test, wrongname.test and selfsigned.test resolve to
// (the fake DNS's "*": unlistedV4, unlistedV6).
const (
	modelPort   = 9443
	realKey     = "sk-real-0123456789abcdef"
	realBearer  = "oat-real-fedcba9876543210"
	placeholder = "agentbox-placeholder"
	// sseHold is how long the model server waits between its two events.
	sseHold = 3 * time.Second
)

var labKeys = []firewall.Key{
	{Name: "MODEL_KEY", Header: "x-api-key", Host: "model.test", Port: modelPort},
	{Name: "BEARER_KEY", Header: "authorization", Bearer: true, Host: "model.test", Port: modelPort},
	{Name: "WRONGNAME_KEY", Header: "x-api-key", Host: "wrongname.test", Port: modelPort},
	{Name: "SELFSIGNED_KEY", Header: "x-api-key", Host: "selfsigned.test", Port: modelPort},
	{Name: "UNSET_KEY", Header: "x-api-key", Host: "model.test", Port: modelPort},
	// One base URL, two keys (claude's API key and subscription token):
	// the first handed over of the two goes upstream.
	{Name: "PAIR_API_KEY", Header: "x-api-key", Host: "model.test", Port: modelPort, Base: "PAIR_BASE_URL"},
	{Name: "PAIR_TOKEN", Header: "authorization", Bearer: true, Host: "model.test", Port: modelPort, Base: "PAIR_BASE_URL"},
}

// labCA is the lab's own CA, which the lab gives HAProxy instead of the
// system's bundle.
const labCA = "/etc/agentbox/lab-ca.pem"

// certs returns the lab CA's PEM and the model server's certificates by
// SNI: model.test's from the CA; for wrongname.test one of the CA's for
// another name; for selfsigned.test a self-signed one of its own name.
func certs(t testing.TB) ([]byte, map[string]netlab.TLSCert) {
	t.Helper()
	caKey, caPEM, ca := newCert(t, "agentbox lab CA", nil, nil, nil)
	out := map[string]netlab.TLSCert{}
	for sni, name := range map[string]string{"model.test": "model.test", "wrongname.test": "other.test"} {
		key, leaf, _ := newCert(t, name, []string{name}, ca, caKey)
		out[sni] = netlab.TLSCert{Cert: leaf, Key: pemKey(t, key)}
	}
	self, selfPEM, _ := newCert(t, "selfsigned.test", []string{"selfsigned.test"}, nil, nil)
	out["selfsigned.test"] = netlab.TLSCert{Cert: selfPEM, Key: pemKey(t, self)}
	return caPEM, out
}

// newCert makes a certificate for names signed by parent (self-signed, a
// CA, without one) and returns its key, its PEM and itself.
func newCert(t testing.TB, cn string, names []string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		DNSNames: names, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if names == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert
}

func pemKey(t testing.TB, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// newKeysLab starts the lab's firewall with the gateway and labKeys, the
// model server in the lab's internet, and HAProxy trusting the lab's CA.
func newKeysLab(t testing.TB, extra map[string]netlab.File) (*lab, *netlab.Helper) {
	l := newLab(t)
	c, err := generator.Compile("testdata/lab", generator.CompileOptions{CheckMounts: true})
	if err != nil {
		t.Fatal(err)
	}
	pol := c.Plan().Policy
	pol.Gateway = true
	for _, name := range []string{"model.test", "selfsigned.test", "wrongname.test"} {
		pol.Domains = append(pol.Domains, firewall.Domain{Name: name, Ports: []uint16{modelPort}, Sources: []string{"lab"}})
	}
	pol.Keys = labKeys
	files, err := firewall.Render(pol)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rules.nft", "dnsmasq.conf", "entrypoint.sh", "policy.bash"} {
		l.files[name] = files[name]
	}
	ca, leaves := certs(t)
	l.files["haproxy.cfg"] = []byte(strings.ReplaceAll(string(files["haproxy.cfg"]), "ca-file "+firewall.GatewayCAFile+" ", "ca-file "+labCA+" "))
	model, err := l.lab.StartHelper(l.net, "server", 0)
	if err != nil {
		t.Fatal(err)
	}
	l.serve(model, &netlab.ServerConfig{TLS: []netlab.TLSServer{
		{Listen: addr(unlistedV4, modelPort), Certs: leaves, Hold: sseHold},
		{Listen: addr(unlistedV6, modelPort), Certs: leaves, Hold: sseHold},
	}})
	spec := l.egressSpec()
	spec.Files[labCA] = netlab.File{Data: ca, Mode: 0o644}
	for path, f := range extra {
		spec.Files[path] = f
	}
	p := l.start(spec)
	l.ready(p)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the egress log:\n%s", p.Output())
		}
	})
	return l, model
}

// modelRequest is what an agent CLI sends to its base URL: a placeholder
// in every credential header.
func modelRequest(listen int) []byte {
	body := `{"stream":true}`
	return []byte(fmt.Sprintf("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nx-api-key: %s\r\nAuthorization: Bearer %s\r\n"+
		"x-goog-api-key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", listen, placeholder, placeholder, placeholder, len(body), body))
}

// TestLabGatewayKeys: the agent's plain-HTTP request with a placeholder
// reaches the provider over TLS with the real key in its place; the
// stream's first event arrives before the stream ends; a certificate of
// another name or of another CA is refused; the key is nowhere the agent
// can read.
func TestLabGatewayKeys(t *testing.T) {
	l, model := newKeysLab(t, nil)
	listen := firewall.KeyListeners(labKeys)
	ready := []byte("GET " + firewall.KeysReadyPath + " HTTP/1.1\r\nHost: x\r\n\r\n")
	if r := l.send("127.0.0.1", listen["MODEL_KEY"], 0, 2*time.Second, "\r\n\r\n", ready); !strings.HasPrefix(r.Data, "HTTP/1.1 503") {
		t.Errorf("the keys' readiness before keys-done: %v, want 503", r)
	}
	for name, key := range map[string]string{"MODEL_KEY": realKey, "BEARER_KEY": realBearer, "WRONGNAME_KEY": realKey, "SELFSIGNED_KEY": realKey} {
		if out, code, err := l.egress.EnterInput(key+"\n", append(netlab.CapArgv(egressCaps), firewall.EntrypointPath, firewall.SetKeyArg, name)...); err != nil || code != 0 {
			t.Fatalf("set-key %s: exit %d (%v): %s", name, code, err, out)
		}
	}
	if out, code, err := l.egress.EnterInput("", append(netlab.CapArgv(egressCaps), firewall.EntrypointPath, firewall.KeysDoneArg)...); err != nil || code != 0 {
		t.Fatalf("keys-done: exit %d (%v): %s", code, err, out)
	}
	for _, name := range []string{"MODEL_KEY", "UNSET_KEY"} {
		if r := l.send("127.0.0.1", listen[name], 0, 2*time.Second, "\r\n\r\n", ready); !strings.HasPrefix(r.Data, "HTTP/1.1 200") {
			t.Errorf("the keys' readiness on %s after keys-done: %v, want 200", name, r)
		}
	}
	t.Run("SetKeyRefuses", func(t *testing.T) {
		for _, c := range []struct{ name, value string }{{"MODEL_KEY", "two words"}, {"MODEL_KEY", "a;b"}, {"MODEL_KEY", ""}, {"NOT_A_KEY", "x"}} {
			if out, code, _ := l.egress.EnterInput(c.value+"\n", append(netlab.CapArgv(egressCaps), firewall.EntrypointPath, firewall.SetKeyArg, c.name)...); code != 2 {
				t.Errorf("set-key %s with %q: exit %d, want 2: %s", c.name, c.value, code, out)
			}
		}
	})
	t.Run("RealKeyUpstream", func(t *testing.T) {
		l := l.on(t)
		since := len(events(t, model, 0))
		for name, want := range map[string]map[string]string{
			"MODEL_KEY":  {"X-Api-Key": "[" + realKey + "]"},
			"BEARER_KEY": {"Authorization": "[Bearer " + realBearer + "]"},
		} {
			start := time.Now()
			r := l.send("127.0.0.1", listen[name], 0, sseHold-time.Second, "data: first", modelRequest(listen[name]))
			if !r.OK || !strings.HasPrefix(r.Data, "HTTP/1.1 200") || strings.Contains(r.Data, "data: last") {
				t.Errorf("%s: %v, want the first event alone", name, r)
			} else if took := time.Since(start); took >= sseHold {
				t.Errorf("%s: the first event came after %v, the stream's end (buffered)", name, took)
			}
			got := events(t, model, since)
			since += len(got)
			if len(got) != 1 || got[0].Kind != "https" || got[0].SNI != "model.test" || got[0].Name != fmt.Sprintf("model.test:%d", modelPort) ||
				fmt.Sprint(got[0].Headers) != fmt.Sprint(want) || got[0].Path != "/v1/messages" {
				t.Errorf("%s: the model server saw %+v, want one request for model.test with only %v", name, got, want)
			}
		}
		// The whole stream passes too.
		r := l.send("127.0.0.1", listen["MODEL_KEY"], 0, sseHold+2*time.Second, "data: last", modelRequest(listen["MODEL_KEY"]))
		if !r.OK || !strings.Contains(r.Data, "data: first\n\n") || !strings.Contains(r.Data, "data: last") {
			t.Errorf("the whole stream: %v", r)
		}
	})
	t.Run("WrongCertificate", func(t *testing.T) {
		l := l.on(t)
		since := len(events(t, model, 0))
		for _, name := range []string{"WRONGNAME_KEY", "SELFSIGNED_KEY"} {
			r := l.send("127.0.0.1", listen[name], 0, 8*time.Second, "\r\n\r\n", modelRequest(listen[name]))
			if !strings.HasPrefix(r.Data, "HTTP/1.1 503") {
				t.Errorf("%s: %v, want 503 from the gateway", name, r)
			}
		}
		if got := events(t, model, since); len(got) != 0 {
			t.Errorf("a request reached the model server through a wrong certificate: %+v", got)
		}
	})
	t.Run("UnsetKey", func(t *testing.T) {
		r := l.on(t).send("127.0.0.1", listen["UNSET_KEY"], 0, 2*time.Second, "secrets file", modelRequest(listen["UNSET_KEY"]))
		if !strings.HasPrefix(r.Data, "HTTP/1.1 503") || !strings.Contains(r.Data, "holds no UNSET_KEY") {
			t.Errorf("a key never set: %v, want 503 saying so", r)
		}
	})
	t.Run("SetKeyWaitsForTheAPI", func(t *testing.T) { setKeyWaits(t, l) })
	t.Run("OneBaseTwoKeys", func(t *testing.T) { oneBaseTwoKeys(t, l.on(t), model, listen["PAIR_TOKEN"]) })
	t.Run("NowhereTheAgentReads", func(t *testing.T) { agentSearch(t, l.on(t)) })
	if out := l.egress.Output(); strings.Contains(out, realKey) || strings.Contains(out, realBearer) {
		t.Errorf("the egress log holds a key:\n%s", out)
	}
	keyRecords(t, l.egress.Output())
}

// keyRecords: the requests through the keys' listeners are connection
// records like the names' (internal/connlog reads them all), with the
// provider's name and port; the keys' readiness checks are not recorded.
func keyRecords(t *testing.T, out string) {
	log, err := connlog.Parse(strings.NewReader(out), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if log.BadRecords > 0 {
		t.Errorf("%d records of the egress log do not parse:\n%s", log.BadRecords, out)
	}
	var allowed, ready int
	for _, r := range log.Connections {
		if r.Name == "model.test" && r.Port == modelPort && r.Verdict == connlog.Allowed && r.BytesUp > 0 && r.BytesDown > 0 {
			allowed++
		}
		if r.Port == 0 || r.Name == "" {
			ready++
		}
	}
	if allowed < 3 || ready > 0 {
		t.Errorf("%d allowed records of model.test:%d (want the 3 of RealKeyUpstream at least: a record is written when its stream ends), %d without a name: %+v", allowed, modelPort, ready, log.Connections)
	}
}

// setKeyWaits: set-key before HAProxy's runtime API is there (agentbox
// run hands a task's keys as its egress starts) waits for it instead of
// failing: the socket is moved away, set-key starts, the socket comes back
// a second later.
func setKeyWaits(t *testing.T, l *lab) {
	sock, away := firewall.GatewaySocket, firewall.GatewaySocket+".away"
	enter := func(input string, argv ...string) (string, int, error) {
		return l.egress.EnterInput(input, append(netlab.CapArgv(egressCaps), argv...)...)
	}
	if out, code, err := enter("", "mv", sock, away); err != nil || code != 0 {
		t.Fatalf("mv: %d %v %s", code, err, out)
	}
	done := make(chan string, 1)
	go func() {
		out, code, err := enter(realKey+"\n", firewall.EntrypointPath, firewall.SetKeyArg, "MODEL_KEY")
		done <- fmt.Sprintf("exit %d (%v): %s", code, err, out)
	}()
	time.Sleep(time.Second)
	select {
	case r := <-done:
		t.Errorf("set-key without the runtime API ended at once: %s", r)
	default:
	}
	if out, code, err := enter("", "mv", away, sock); err != nil || code != 0 {
		t.Fatalf("mv back: %d %v %s", code, err, out)
	}
	select {
	case r := <-done:
		if !strings.HasPrefix(r, "exit 0 ") {
			t.Errorf("set-key once the runtime API is back: %s", r)
		}
	case <-time.After(10 * time.Second):
		t.Error("set-key did not end 10 s after the runtime API came back")
	}
}

// oneBaseTwoKeys: the two keys of PAIR_BASE_URL share listen; with the
// token alone handed over, the provider gets it as a bearer token; once the
// API key is handed over too, the API key alone, in x-api-key.
func oneBaseTwoKeys(t *testing.T, l *lab, model *netlab.Helper, listen int) {
	if got := firewall.KeyListeners(labKeys)["PAIR_API_KEY"]; got != listen {
		t.Fatalf("PAIR_API_KEY listens on %d, PAIR_TOKEN on %d: want one listener", got, listen)
	}
	r := l.send("127.0.0.1", listen, 0, 2*time.Second, "secrets file", modelRequest(listen))
	if !strings.HasPrefix(r.Data, "HTTP/1.1 503") || !strings.Contains(r.Data, "holds no PAIR_API_KEY, PAIR_TOKEN") {
		t.Errorf("neither key handed over: %v, want 503 naming both", r)
	}
	since := len(events(t, model, 0))
	for _, c := range []struct{ set, value, header, want string }{
		{"PAIR_TOKEN", realBearer, "Authorization", "[Bearer " + realBearer + "]"},
		{"PAIR_API_KEY", realKey, "X-Api-Key", "[" + realKey + "]"},
	} {
		if out, code, err := l.egress.EnterInput(c.value+"\n", append(netlab.CapArgv(egressCaps), firewall.EntrypointPath, firewall.SetKeyArg, c.set)...); err != nil || code != 0 {
			t.Fatalf("set-key %s: exit %d (%v): %s", c.set, code, err, out)
		}
		r := l.send("127.0.0.1", listen, 0, sseHold-time.Second, "data: first", modelRequest(listen))
		got := events(t, model, since)
		since += len(got)
		if !r.OK || len(got) != 1 || fmt.Sprint(got[0].Headers) != fmt.Sprint(map[string]string{c.header: c.want}) {
			t.Errorf("after set-key %s: %v; the model server saw %+v, want only %s %s", c.set, r, got, c.header, c.want)
		}
	}
}

// agentSearch reads, as the agent, every process's environment and
// command line and every file under egress's /run and /tmp that it can
// open (through /proc/PID/root), holding a placeholder in its own
// environment: the dump has the placeholder and neither key.
func agentSearch(t *testing.T, l *lab) {
	const script = `
use File::Find;
my (@roots, %seen, %n);
for my $own ("/run", "/tmp", "/etc/agentbox", "/etc/agentbox-keys") { my @st = stat $own; $seen{"$st[0]:$st[1]"}++ if @st }
for my $d (glob "/proc/[0-9]*") {
	for my $f ("environ", "cmdline") {
		if (open my $h, "<", "$d/$f") { local $/; my $c = <$h>; print "== $d/$f\n", ($c // ""), "\n"; $n{$f}++ }
		else { print "-- $d/$f: $!\n" }
	}
	# Each mount once, and not the agent's own (the host's, in the lab).
	for my $r ("$d/root/run", "$d/root/tmp", "$d/root/etc/agentbox", "$d/root/etc/agentbox-keys") {
		my @st = stat $r or next;
		push @roots, $r unless $seen{"$st[0]:$st[1]"}++;
	}
}
find({ no_chdir => 1, wanted => sub {
	return unless -f $_ && -r _ && -s _ < 1 << 20;
	if (open my $h, "<", $_) { local $/; my $c = <$h>; print "== $_\n", ($c // ""), "\n"; $n{files}++ }
} }, @roots) if @roots;
printf "counts environ=%d cmdline=%d files=%d roots=%s\n", $n{environ}, $n{cmdline}, $n{files}, join(",", @roots);
`
	pid := l.egress.Pid()
	r := l.do(netlab.Request{Op: "exec", Argv: []string{"env", "PROBE_KEY=" + placeholder, "perl", "-e", script}, Timeout: 30 * time.Second})
	if !r.OK {
		t.Fatalf("the agent's search: %v", r)
	}
	for _, key := range []string{realKey, realBearer} {
		if i := strings.Index(r.Data, key); i >= 0 {
			where := r.Data[strings.LastIndex(r.Data[:i], "\n== ")+1 : i]
			if j := strings.Index(where, "\n"); j >= 0 {
				where = where[:j]
			}
			t.Errorf("the agent reads a real key in %s", where)
		}
	}
	if !strings.Contains(r.Data, "PROBE_KEY="+placeholder) {
		t.Errorf("the search does not see the placeholder in its own environment: %.2000s", r.Data)
	}
	if !strings.Contains(r.Data, fmt.Sprintf("-- /proc/%d/environ: Permission denied", pid)) {
		t.Errorf("the agent reads the environment of egress's entrypoint (pid %d)", pid)
	}
	t.Logf("%s", r.Data[strings.LastIndex(r.Data, "counts "):])
}

// events returns the model server's events from number since on.
func events(t testing.TB, h *netlab.Helper, since int) []netlab.Event {
	t.Helper()
	r, err := h.Call(netlab.Request{Op: "events", Since: since})
	if err != nil || !r.OK {
		t.Fatalf("events: %v %v", r, err)
	}
	return r.Events
}

// TestLabGatewayKeysFromFiles: a task on Kubernetes has its keys as files
// of a Secret mounted only in egress (firewall.GatewayKeysDir): the
// entrypoint hands them to HAProxy before it says it is ready, and the
// agent cannot read them.
func TestLabGatewayKeysFromFiles(t *testing.T) {
	l, model := newKeysLab(t, map[string]netlab.File{
		firewall.GatewayKeysDir + "/MODEL_KEY":  {Data: []byte(realKey), Mode: 0o400},
		firewall.GatewayKeysDir + "/BEARER_KEY": {Data: []byte("not one word\n"), Mode: 0o400},
	})
	listen := firewall.KeyListeners(labKeys)
	ready := []byte("GET " + firewall.KeysReadyPath + " HTTP/1.1\r\nHost: x\r\n\r\n")
	if r := l.send("127.0.0.1", listen["MODEL_KEY"], 0, 2*time.Second, "\r\n\r\n", ready); !strings.HasPrefix(r.Data, "HTTP/1.1 200") {
		t.Errorf("the keys' readiness once egress is ready: %v, want 200", r)
	}
	r := l.send("127.0.0.1", listen["MODEL_KEY"], 0, sseHold-time.Second, "data: first", modelRequest(listen["MODEL_KEY"]))
	if got := events(t, model, 0); !r.OK || len(got) != 1 || got[0].Headers["X-Api-Key"] != "["+realKey+"]" {
		t.Errorf("a request with the key of the file: %v; the server saw %+v", r, got)
	}
	r = l.send("127.0.0.1", listen["BEARER_KEY"], 0, 2*time.Second, "secrets file", modelRequest(listen["BEARER_KEY"]))
	if !strings.Contains(r.Data, "holds no BEARER_KEY") || !strings.Contains(l.egress.Output(), "refused the key BEARER_KEY") {
		t.Errorf("a key file that is not one word: %v, want it refused and logged", r)
	}
	agentSearch(t, l.on(t))
}
