package firewall

import (
	"bytes"
	"fmt"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// These tests run the real tools on the rendered files. None of them
// changes the machine: nft -c checks a ruleset in the kernel without
// committing it, dnsmasq --test only parses, bash -n only parses.

func writeFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		switch name { // they read these files, not the image's
		case entrypointFile:
			data = bytes.Replace(data, []byte("POLICY="+PolicyPath+"\n"), []byte("POLICY="+filepath.Join(dir, policyFile)+"\n"), 1)
		case rulesFile:
			data = bytes.Replace(data, []byte(`include "`+CommonPath+`"`), []byte(`include "`+filepath.Join(dir, commonFile)+`"`), 1)
		case dnsmasqFile:
			data = bytes.Replace(data, []byte("conf-file="+DnsmasqCommonPath+"\n"), []byte("conf-file="+filepath.Join(dir, dnsmasqCommon)+"\n"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func run(t *testing.T, stdin string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.Bytes())
	}
}

func sortedPolicyNames() []string {
	var names []string
	for name := range policies {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func TestNftAcceptsRules(t *testing.T) {
	nft := requireTool(t, "nft", true)
	for _, name := range sortedPolicyNames() {
		t.Run(name, func(t *testing.T) {
			dir := writeFiles(t, mustRender(t, policies[name]))
			rules := filepath.Join(dir, rulesFile)
			run(t, "", nft, "-c", "-f", rules)
			if policies[name].Mode == ModeNone {
				return // the entrypoint adds no upstream resolver in this mode
			}
			// The transaction the entrypoint loads: the rules and the upstream
			// resolvers together.
			load := fmt.Sprintf("include %q\n"+
				"add element inet agentbox upstream_v4 { 127.0.0.11 }\n"+
				"add element inet agentbox upstream_v6 { 2001:db8::53 }\n", rules)
			run(t, load, nft, "-c", "-f", "-")
		})
	}
}

// TestNftNeedsNoProtocolsFile checks the rules with nft in a mount
// namespace where /etc/protocols is empty: the egress image has none (no
// netbase), and nft resolves a protocol name that is no keyword of its
// grammar (ipv6-icmp) through it.
func TestNftNeedsNoProtocolsFile(t *testing.T) {
	nft := requireTool(t, "nft", true)
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "unshare")
	for _, name := range sortedPolicyNames() {
		t.Run(name, func(t *testing.T) {
			rules := filepath.Join(writeFiles(t, mustRender(t, policies[name])), rulesFile)
			run(t, "", "unshare", "--mount", "sh", "-c", `mount --bind /dev/null /etc/protocols && exec "$0" -c -f "$1"`, nft, rules)
		})
	}
}

// TestNftAcceptsLockdown checks the table the entrypoint loads when it has to
// fail closed without the rules: its lockdown function, run with an nft that
// prints its input, must print a ruleset that nft accepts.
func TestNftAcceptsLockdown(t *testing.T) {
	nft := requireTool(t, "nft", true)
	out := sourceEntrypoint(t, "nft() { cat; }\nlockdown")
	if !strings.Contains(out, "policy drop;") {
		t.Fatalf("lockdown printed %q", out)
	}
	run(t, out, nft, "-c", "-f", "-")
}

// sourceEntrypoint sources the entrypoint rendered for the rich policy in
// bash, runs script after it and returns its output.
func sourceEntrypoint(t *testing.T, script string) string {
	t.Helper()
	return sourceEntrypointOf(t, policies["rich"], script)
}

// sourceEntrypointOf is sourceEntrypoint for the entrypoint of policy p.
func sourceEntrypointOf(t *testing.T, p Policy, script string) string {
	t.Helper()
	bash := requireTool(t, "bash", false)
	dir := writeFiles(t, mustRender(t, p))
	src := fmt.Sprintf("source %q\nset +e\n%s\n", filepath.Join(dir, entrypointFile), script)
	out, err := exec.Command(bash, "-c", src).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return string(out)
}

func TestDnsmasqAcceptsConf(t *testing.T) {
	dnsmasq := requireTool(t, "dnsmasq", false)
	for _, name := range sortedPolicyNames() {
		t.Run(name, func(t *testing.T) {
			p := policies[name]
			files := mustRender(t, p)
			// The servers file as the entrypoint writes it.
			servers := "# servers\n"
			for _, d := range p.Domains {
				servers += fmt.Sprintf("server=/%s/127.0.0.11\nserver=/%s/2001:db8::53\n", d.Name, d.Name)
			}
			if p.Mode == ModeOpen {
				servers += "server=127.0.0.11\nserver=2001:db8::53\n"
			}
			files["servers.conf"] = []byte(servers)
			dir := writeFiles(t, files)
			// dnsmasq --test does not look up user=, so the user need not exist.
			run(t, "", dnsmasq, "--test",
				"--conf-file="+filepath.Join(dir, dnsmasqFile),
				"--conf-file="+filepath.Join(dir, "servers.conf"))
		})
	}
}

func TestBashParsesEntrypoint(t *testing.T) {
	bash := requireTool(t, "bash", false)
	dir := writeFiles(t, mustRender(t, policies["small"]))
	run(t, "", bash, "-n", filepath.Join(dir, entrypointFile))
}

func TestEntrypointUsage(t *testing.T) {
	bash := requireTool(t, "bash", false)
	dir := writeFiles(t, mustRender(t, policies["small"]))
	for _, args := range [][]string{{"bogus"}, {"run", "extra"}, {"health", "x"}} {
		cmd := exec.Command(bash, append([]string{filepath.Join(dir, entrypointFile)}, args...)...)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "usage:") {
			t.Errorf("entrypoint %q: %v, output %q; want exit 2 and usage", args, err, out)
		}
	}
}

// TestEntrypointValidators runs the entrypoint's checks of nameserver
// addresses, which decide what reaches nft and dnsmasq.
func TestEntrypointValidators(t *testing.T) {
	cases := []struct {
		fn, arg string
		ok      bool
	}{
		{"is_ipv4", "127.0.0.11", true},
		{"is_ipv4", "255.255.255.255", true},
		{"is_ipv4", "0.0.0.0", true},
		{"is_ipv4", "256.1.1.1", false},
		{"is_ipv4", "01.2.3.4", false},
		{"is_ipv4", "1.2.3", false},
		{"is_ipv4", "1.2.3.4.5", false},
		{"is_ipv4", "1.2.3.4 ", false},
		{"is_ipv4", "1.2.3.4;x", false},
		{"is_ipv4", "", false},
		{"is_ipv6", "::1", true},
		{"is_ipv6", "::", true},
		{"is_ipv6", "2001:db8::53", true},
		{"is_ipv6", "2001:DB8:0:0:0:0:0:1", true},
		{"is_ipv6", "1::", true},
		{"is_ipv6", "1:2:3:4:5:6:7::", true},
		{"is_ipv6", "1:2:3:4:5:6:7:8:9", false},
		{"is_ipv6", "1:2:3:4:5:6:7", false},
		{"is_ipv6", "1:2:3:4:5:6:7::8", false},
		{"is_ipv6", "1::2::3", false},
		{"is_ipv6", ":::", false},
		{"is_ipv6", ":1", false},
		{"is_ipv6", "1:", false},
		{"is_ipv6", "12345::1", false},
		{"is_ipv6", "fe80::1%eth0", false},
		{"is_ipv6", "::ffff:1.2.3.4", false},
		{"is_ipv6", "::1 ", false},
		{"is_ipv6", "$(id)", false},
		{"is_ipv6", "", false},
	}
	var script strings.Builder
	for i, c := range cases {
		fmt.Fprintf(&script, "%s %q; echo \"%d $?\"\n", c.fn, c.arg, i)
	}
	out := sourceEntrypoint(t, script.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("bash printed %q", out)
	}
	for i, c := range cases {
		want := fmt.Sprintf("%d 1", i)
		if c.ok {
			want = fmt.Sprintf("%d 0", i)
		}
		if lines[i] != want {
			t.Errorf("%s %q: got %q, want ok=%v", c.fn, c.arg, lines[i], c.ok)
		}
	}
}

// checkHaproxy runs haproxy -c on files' haproxy-common.cfg and haproxy.cfg
// as HAProxy reads them, in a directory of the test's that holds, empty,
// every map of GatewayGrantsDir they name (the entrypoint makes them
// before HAProxy starts). edit, when not nil, changes each file first.
func checkHaproxy(t *testing.T, files map[string][]byte, edit func(string) string) {
	t.Helper()
	dir := t.TempDir()
	maps := regexp.MustCompile(regexp.QuoteMeta(GatewayGrantsDir) + `/[a-z0-9_]+\.map`)
	var paths []string
	for _, name := range []string{gatewayCommonFile, gatewayFile} {
		cfg := string(files[name])
		for _, m := range maps.FindAllString(cfg, -1) {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(m)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cfg = strings.ReplaceAll(cfg, GatewayGrantsDir, dir)
		if edit != nil {
			cfg = edit(cfg)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, "-f", path)
	}
	run(t, "", requireTool(t, "haproxy", false), append([]string{"-c", "-q"}, paths...)...)
}
