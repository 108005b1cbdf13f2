package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/task"
)

// hostile are names and reasons as the agent (or whoever wrote the text)
// can write them, with the escape termsafe.String gives each: ESC/CSI, OSC
// 52, the C1 CSI as a raw byte and in UTF-8, a bidi override, invalid
// UTF-8. Lower-case: the egress log's names are compared lower-cased.
var hostile = []struct{ raw, escaped string }{
	{"\x1b[2j", `\x1b[2j`},
	{"\x1b]52;c;agk=\a", `\x1b]52;c;agk=\x07`},
	{"\x9b2j", `\x9b2j`},
	{"\u009b2j", `\u{9b}2j`},
	{"\u202egnp", `\u{202e}gnp`},
	{"\xff", `\xff`},
}

// hostileLog is an egress log whose refused names are hostile, one of
// them also answered by the filter for an address refused on its port.
func hostileLog() string {
	var b strings.Builder
	for i, h := range hostile {
		b.WriteString("2026-11-22T10:00:0" + string(rune('0'+i)) + ".000000000Z dnsmasq[25]: config " + h.raw + ".example is NXDOMAIN\n")
	}
	b.WriteString("2026-11-22T10:01:00.000000000Z dnsmasq[25]: reply " + hostile[1].raw + ".example is 198.51.100.9\n")
	b.WriteString("2026-11-22T10:02:00.000000000Z " + pktRecord("unlisted", "198.51.100.9", 6, 8443) + "\n")
	return b.String()
}

// TestBlockedEscapesNames: the names of the egress log reach blocked's
// table through termsafe (also inside a why), and its --json whole.
func TestBlockedEscapesNames(t *testing.T) {
	d := testDeps()
	d.now = func() time.Time { return time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC) }
	d.egressLog = fakeEgressLogs{logs: map[string]string{"": hostileLog()}}.open
	stdout, stderr, code := runDeps(t, d, "blocked")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	terminalSafe(t, "blocked's table", stdout)
	for _, h := range hostile {
		if want := "\n" + h.escaped + ".example "; !strings.Contains(stdout, want) {
			t.Errorf("blocked's table lacks the row of %s:\n%s", h.escaped, stdout)
		}
	}
	if want := "TCP to an address of " + hostile[1].escaped + ".example (answered"; !strings.Contains(stdout, want) {
		t.Errorf("blocked's table lacks %s:\n%s", want, stdout)
	}

	stdout, _, _ = runDeps(t, d, "blocked", "--json")
	jsonSafe(t, "blocked --json", stdout)
	var v struct {
		Names     []struct{ Name string }
		Addresses []struct{ Why string }
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, n := range v.Names {
		seen[n.Name] = true
	}
	for _, h := range hostile {
		if n := strings.ToValidUTF8(h.raw, "\ufffd") + ".example"; !seen[n] {
			t.Errorf("blocked --json lacks the name %q (the names decode to themselves): %s", n, stdout)
		}
	}
	if len(v.Addresses) != 1 || !strings.Contains(v.Addresses[0].Why, "address of "+hostile[1].raw+".example (") {
		t.Errorf("blocked --json: addresses %+v", v.Addresses)
	}
}

// TestRunSummaryEscapesNames: the refused names of run's summary go
// through termsafe.
func TestRunSummaryEscapesNames(t *testing.T) {
	names, addrs, _, err := task.EgressRefusals(strings.NewReader(hostileLog()), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printSummary(&b, &task.Summary{Task: "fix-1", State: task.StateExited, RefusedNames: names, RefusedAddresses: addrs})
	terminalSafe(t, "run's summary", b.String())
	for _, h := range hostile {
		if want := h.escaped + ".example (1)"; !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %s:\n%s", want, b.String())
		}
	}
	var js strings.Builder
	if err := writeJSON(&js, &task.Summary{RefusedNames: names, RefusedAddresses: addrs}); err != nil {
		t.Fatal(err)
	}
	jsonSafe(t, "run --json", js.String())
	if !strings.Contains(js.String(), `"\u001b]52;c;agk=\u0007.example"`) {
		t.Errorf("run --json does not hold the name itself:\n%s", js.String())
	}
}

// TestAuditEscapes: a grant's reason, result and user reach audit's and
// allow --list's tables through termsafe, and their --json whole; the log
// holds them as given (JSON-escaped, no raw C1 or bidi rune in the file).
func TestAuditEscapes(t *testing.T) {
	var reason, want string
	for _, h := range hostile {
		reason += h.raw + " "
		want += h.escaped + " "
	}
	// The log is JSON: invalid UTF-8 is stored (and printed) as U+FFFD.
	reason, want = "why "+reason+"end", strings.NewReplacer(`\x9b`, "\ufffd", `\xff`, "\ufffd").Replace("why "+want+"end")
	dir, d, _, log := allowProject(t, "", map[string]fakeReply{
		"fix-1: grant 198.18.7.0/24 443 1800": {},
		"fix-1: grants":                       {out: "198.18.7.0/24 443 1795\n"},
		": requests":                          {}, // audit asks for the requests
	})
	d.user = func() string { return "mallory\u202e" }
	if _, stderr, code := runDeps(t, d, "allow", "-C", dir, "--task", "fix-1", "198.18.7.0/24", "--for", "30m", "--reason", reason); code != 0 {
		t.Fatalf("allow: exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	jsonSafe(t, "the audit log", string(data))
	recs := readRecords(t, log)
	if len(recs) != 1 || recs[0]["reason"] != strings.ToValidUTF8(reason, "\ufffd") {
		t.Fatalf("the audit log's reason is not the one given: %v", recs)
	}

	for _, args := range [][]string{{"audit", "-C", dir}, {"allow", "-C", dir, "--task", "fix-1", "--list"}} {
		stdout, stderr, code := runDeps(t, d, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, stderr)
		}
		terminalSafe(t, args[0]+"'s table", stdout)
		if !strings.Contains(stdout, want) {
			t.Errorf("%s's table lacks the reason %s:\n%s", args[0], want, stdout)
		}
		if args[0] == "audit" && !strings.Contains(stdout, `mallory\u{202e}`) {
			t.Errorf("audit's table lacks the user escaped:\n%s", stdout)
		}
		stdout, _, _ = runDeps(t, d, append(args, "--json")...)
		jsonSafe(t, args[0]+" --json", stdout)
		var rows []struct{ Reason string }
		if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 || rows[0].Reason != strings.ToValidUTF8(reason, "\ufffd") {
			t.Errorf("%s --json: %v %+v", args[0], err, rows)
		}
	}
}

// TestGenerateCheckEscapes: generate --check prints the files of
// .agentbox and .devcontainer as they are on disk (a pull request's, in
// CI): their names and lines reach the terminal through termsafe.
func TestGenerateCheckEscapes(t *testing.T) {
	dir := project(t, "agent-claude")
	compose := filepath.Join(dir, ".agentbox", "docker-compose.yml")
	data, err := os.ReadFile(compose)
	if err != nil {
		t.Fatal(err)
	}
	var line, want string
	for _, h := range hostile {
		line += h.raw + " "
		want += h.escaped + " "
	}
	writeFile(t, compose, append(data, []byte("# "+line+"\\ kept\n")...))
	writeFile(t, filepath.Join(dir, ".agentbox", "x"+hostile[1].raw+hostile[4].raw+".sh"), []byte("echo "+hostile[3].raw+"\n"))
	stdout, stderr, code := runInDeps(t, testDeps(), dir, "generate", "--check")
	if code != exitDrift {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	terminalSafe(t, "generate --check", stdout)
	for _, w := range []string{
		"+# " + want + `\ kept` + "\n", // removed from disk: the line of the diff, escaped; its backslash kept
		`x\x1b]52;c;agk=\x07\u{202e}gnp.sh`,
		"-echo " + `\u{9b}2j`,
	} {
		if !strings.Contains(stdout, w) && !strings.Contains(stdout, strings.Replace(w, "+#", "-#", 1)) {
			t.Errorf("generate --check lacks %q:\n%s", w, stdout)
		}
	}
}

// TestDiffEscapesBase: agentbox diff names its base as given, escaped: a
// branch name may hold C1 and bidi runes (git refuses only ASCII controls).
func TestDiffEscapesBase(t *testing.T) {
	gitHome(t)
	dir := project(t, "agent-claude")
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "sandbox")
	base := "b" + hostile[3].raw + hostile[4].raw
	git(t, dir, "branch", base)
	for format, want := range map[string]string{"text": `(b\u{9b}2j\u{202e}gnp -> working tree)`, "markdown": "`b\\u{9b}2j\\u{202e}gnp`"} {
		stdout, stderr, code := runInDeps(t, testDeps(), dir, "diff", base, "--format", format)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		terminalSafe(t, "diff --format "+format, stdout)
		if !strings.Contains(stdout, want) {
			t.Errorf("diff --format %s lacks %s:\n%s", format, want, stdout)
		}
	}
}
