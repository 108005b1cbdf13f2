package firewall

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// endpoint is the request endpoint run as a process on loopback.
// The host's addresses of startEndpoint's list.
const testHostV4, testHostV6 = "198.19.255.1", "2a01:4f8:ffff:0000:0000:0000:0000:0001"

type endpoint struct {
	base, spool, answers, hosts string
	cmd                         *exec.Cmd
	// Port and Spool are for firewall_test (StartEndpoint).
	Port, Spool string
}

// StartEndpoint is startEndpoint for the tests of package firewall_test.
func StartEndpoint(t *testing.T, p Policy) *endpoint { return startEndpoint(t, p) }

// Answer writes an answer as the entrypoint's answer does.
func (e *endpoint) Answer(t *testing.T, id, state string, until int64, note string) {
	writeAnswer(t, e.answers, id, state, until, note)
}

// startEndpoint renders the request endpoint for p and runs it with perl on
// a free loopback port, as root drops it to RequestUID as the entrypoint
// does.
func startEndpoint(t *testing.T, p Policy) *endpoint {
	t.Helper()
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	prog, err := RequestsProgram()
	if err != nil {
		t.Fatal(err)
	}
	policy, err := RequestsArgs(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // the endpoint's uid reaches its spool
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	e := &endpoint{base: fmt.Sprintf("http://127.0.0.1:%d", port), spool: filepath.Join(dir, "requests"), answers: filepath.Join(dir, "answers")}
	e.Port, e.Spool = strconv.Itoa(port), e.spool
	if err := os.Mkdir(e.answers, 0o755); err != nil {
		t.Fatal(err)
	}
	// The host's addresses and the gateways, as the entrypoint lists them.
	e.hosts = filepath.Join(dir, "hosts")
	if err := os.WriteFile(e.hosts, []byte(testHostV4+"\n"+testHostV6+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	e.cmd = exec.Command("perl", append([]string{"-e", string(prog), "127.0.0.1", strconv.Itoa(port), e.spool, e.answers, strconv.Itoa(RequestUID), e.hosts}, policy...)...)
	e.cmd.Stderr = &stderr
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.cmd.Process.Kill()
		e.cmd.Wait()
		if t.Failed() {
			t.Logf("endpoint's stderr:\n%s", stderr.String())
		}
	})
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if i > 300 {
			t.Fatalf("the endpoint does not listen: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return e
}

func (e *endpoint) ask(t *testing.T, form url.Values) (int, map[string]string) {
	t.Helper()
	resp, err := http.PostForm(e.base+"/v1/requests", form)
	if err != nil {
		t.Fatal(err)
	}
	return answerOf(t, resp)
}

func (e *endpoint) get(t *testing.T, id string) (int, map[string]string) {
	t.Helper()
	resp, err := http.Get(e.base + "/v1/requests/" + id)
	if err != nil {
		t.Fatal(err)
	}
	return answerOf(t, resp)
}

func answerOf(t *testing.T, resp *http.Response) (int, map[string]string) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{"": string(b)}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		m[k] = v
	}
	return resp.StatusCode, m
}

func requestPolicy(timeout time.Duration) Policy {
	return Policy{
		Never:      []netip.Prefix{netip.MustParsePrefix("198.18.66.0/24")},
		NeverNames: []string{"secret.example"},
		Requests:   &Requests{Timeout: timeout, Max: time.Hour},
	}
}

func form(dest, dur, reason string) url.Values {
	return url.Values{"dest": {dest}, "for": {dur}, "reason": {reason}}
}

var idRE = regexp.MustCompile(`^r[0-9a-f]{12}$`)

func TestRequestEndpointSpoolAndAnswers(t *testing.T) {
	e := startEndpoint(t, requestPolicy(10*time.Minute))
	reason := "fetch the docs \x1b]0;owned\x07 now"
	code, a := e.ask(t, form("*.Docs.Example.com:443,8443", "30m", reason))
	if code != http.StatusCreated || a["state"] != "pending" || !idRE.MatchString(a["id"]) || a["destination"] != "docs.example.com:443,8443" || a["seconds"] != "1800" {
		t.Fatalf("ask: %d %q", code, a[""])
	}
	id := a["id"]
	spooled, err := os.ReadFile(filepath.Join(e.spool, id+".req"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^v 1\nid ` + id + `\ntime [0-9]+\nexpires [0-9]+\ndest docs\.example\.com:443,8443\nseconds 1800\nreason ([0-9a-f]+)\n$`)
	m := want.FindStringSubmatch(string(spooled))
	if m == nil || m[1] != fmt.Sprintf("%x", reason) {
		t.Fatalf("spool file:\n%s", spooled)
	}
	if os.Geteuid() == 0 {
		// Real, effective, saved and filesystem ids all its own, and no
		// other group: nothing left to return to root with.
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", e.cmd.Process.Pid))
		id := strconv.Itoa(RequestUID)
		for _, want := range []string{"Uid:\t" + id + "\t" + id + "\t" + id + "\t" + id + "\n",
			"Gid:\t" + id + "\t" + id + "\t" + id + "\t" + id + "\n", "Groups:\t" + id + " \n"} {
			if !strings.Contains(string(status), "\n"+want) {
				t.Errorf("the endpoint's status lacks %q:\n%s", want, status)
			}
		}
	}
	if code, a := e.get(t, id); code != 200 || a["state"] != "pending" || a["expires"] == "" {
		t.Fatalf("get: %d %q", code, a[""])
	}
	until := time.Now().Add(30 * time.Minute).Unix()
	writeAnswer(t, e.answers, id, "approved", until, "")
	if code, a := e.get(t, id); code != 200 || a["state"] != "approved" || a["until"] != time.Unix(until, 0).UTC().Format(time.RFC3339) {
		t.Fatalf("get after approval: %d %q", code, a[""])
	}
	_, b := e.ask(t, form("198.18.7.9", "5m", "second"))
	writeAnswer(t, e.answers, b["id"], "denied", 0, "not today\x1b[2J")
	if code, a := e.get(t, b["id"]); code != 200 || a["state"] != "denied" || a["note"] != "not today?[2J" {
		t.Fatalf("get after denial: %d %q", code, a[""])
	}
	if code, _ := e.get(t, "r000000000000"); code != 404 {
		t.Errorf("an unknown request: %d", code)
	}
}

// writeAnswer writes an answer as the entrypoint's answer does.
func writeAnswer(t *testing.T, dir, id, state string, until int64, note string) {
	t.Helper()
	body := fmt.Sprintf("state %s\nuntil %d\nnote %x\n", state, until, note)
	if err := os.WriteFile(filepath.Join(dir, id), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRequestEndpointRefuses(t *testing.T) {
	e := startEndpoint(t, requestPolicy(10*time.Minute))
	for _, c := range []struct {
		dest, dur, reason string
		code              int
		note              string
	}{
		{"api.secret.example", "5m", "x", 403, "api.secret.example overlaps secret.example, which elevation.never forbids"},
		{"example", "5m", "x", 400, ""}, // one label
		{"10.1.2.3:5432", "5m", "x", 403, "10.1.2.3 overlaps 10.0.0.0/8"},
		{"198.18.66.7", "5m", "x", 403, "198.18.66.7 overlaps 198.18.66.0/24 (elevation.never)"},
		{"198.18.0.0/15", "5m", "x", 403, "198.18.0.0/15 overlaps 198.18.66.0/24"},
		{"[64:ff9b::c612:4207]:443", "5m", "x", 403, "64:ff9b::c612:4207 overlaps"},
		{"[::1]", "5m", "x", 403, "::1 overlaps ::/96"},
		{"example.com", "2h", "x", 403, "over elevation.max_duration"},
		{"example.com", "soon", "x", 400, ""},
		{"example.com", "5m", "  ", 400, ""},
		{"example.com", "5m", strings.Repeat("y", RequestMaxReason+1), 400, ""},
		{"example.com:99999", "5m", "x", 400, ""},
		{"198.18.1.1/16", "5m", "x", 400, ""}, // host bits
		{"exa mple.com", "5m", "x", 400, ""},
		// The host's addresses: the ruleset refuses them before any grant.
		{testHostV4 + ":443", "5m", "x", 403, testHostV4 + " covers " + testHostV4 + ", an address of the host or a gateway"},
		{"198.19.255.0/24", "5m", "x", 403, "198.19.255.0/24 covers " + testHostV4},
		{"[2a01:4f8:ffff::/48]:443", "5m", "x", 403, "an address of the host or a gateway"},
	} {
		code, a := e.ask(t, form(c.dest, c.dur, c.reason))
		if code != c.code || (c.note != "" && !strings.Contains(a["note"], c.note)) {
			t.Errorf("%s for %s: %d %q, want %d %q", c.dest, c.dur, code, a[""], c.code, c.note)
		}
	}
	// Before the entrypoint has listed the host's addresses, no address is
	// taken.
	if err := os.Remove(e.hosts); err != nil {
		t.Fatal(err)
	}
	if code, a := e.ask(t, form("198.18.7.9:443", "5m", "x")); code != 403 || !strings.Contains(a["note"], "the sandbox is starting") {
		t.Errorf("an address before the host's are known: %d %q", code, a[""])
	}
	if entries, _ := os.ReadDir(e.spool); len(entries) != 0 {
		t.Errorf("refused requests reached the spool: %v", entries)
	}
	// A body over the limit, and no request at all.
	for send, want := range map[string]string{
		"POST /v1/requests HTTP/1.1\r\nContent-Length: 4000\r\n\r\n": "HTTP/1.0 413 ",
		"POST /v1/requests HTTP/1.1\r\n\r\n":                         "HTTP/1.0 411 ",
		"GARBAGE\r\n\r\n":                                            "HTTP/1.0 400 ",
		"GET /v1/" + strings.Repeat("a", 5000):                       "HTTP/1.0 431 ",
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(send))
		b, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(b), want) {
			t.Errorf("%.40q: %q, want %q", send, b, want)
		}
	}
}

func TestRequestEndpointRateLimit(t *testing.T) {
	e := startEndpoint(t, requestPolicy(10*time.Minute))
	var ids []string
	for i := 0; i < RequestMaxPending; i++ {
		code, a := e.ask(t, form(fmt.Sprintf("host%d.example.com", i), "5m", "x"))
		if code != 201 {
			t.Fatalf("request %d: %d %q", i, code, a[""])
		}
		ids = append(ids, a["id"])
	}
	if code, a := e.ask(t, form("more.example.com", "5m", "x")); code != 429 || !strings.Contains(a[""], "wait for an answer already") {
		t.Fatalf("one pending too many: %d %q", code, a[""])
	}
	// Answered requests wait no more, but count in the window.
	for _, id := range ids {
		writeAnswer(t, e.answers, id, "denied", 0, "")
	}
	for i := RequestMaxPending; i < RequestMaxPerWindow; i++ {
		code, a := e.ask(t, form(fmt.Sprintf("host%d.example.com", i), "5m", "x"))
		if code != 201 {
			t.Fatalf("request %d: %d %q", i, code, a[""])
		}
		writeAnswer(t, e.answers, a["id"], "denied", 0, "")
	}
	if code, a := e.ask(t, form("more.example.com", "5m", "x")); code != 429 || !strings.Contains(a[""], "requests in the last") {
		t.Fatalf("one in the window too many: %d %q", code, a[""])
	}
}

func TestRequestEndpointTimeout(t *testing.T) {
	e := startEndpoint(t, requestPolicy(time.Second))
	_, a := e.ask(t, form("example.com", "5m", "x"))
	time.Sleep(1100 * time.Millisecond)
	if code, b := e.get(t, a["id"]); code != 200 || b["state"] != "timed-out" {
		t.Fatalf("after the timeout: %d %q", code, b[""])
	}
	// A late answer is the answer.
	writeAnswer(t, e.answers, a["id"], "denied", 0, "late")
	if _, b := e.get(t, a["id"]); b["state"] != "denied" {
		t.Fatalf("a late answer: %q", b[""])
	}
}
