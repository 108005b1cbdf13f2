package generator

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/npm"
	_ "github.com/agentbox-dev/agentbox/internal/testing/golden"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

const goldenDir = "../testdata/golden"

// goldenInputs returns the golden cases that generate successfully.
func goldenInputs(t testing.TB) []string {
	dirs, err := filepath.Glob(filepath.Join(goldenDir, "*", "want"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

// TestDeterministic renders every golden case repeatedly and expects the
// same bytes each time (map iteration order differs between runs).
func TestDeterministic(t *testing.T) {
	for _, dir := range goldenInputs(t) {
		first, err := generate(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for range 10 {
			again, err := generate(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(again) != len(first) {
				t.Fatalf("%s: %d files, then %d", dir, len(first), len(again))
			}
			for p, data := range first {
				if !bytes.Equal(again[p], data) {
					t.Fatalf("%s: %s differs between two renders", dir, p)
				}
			}
		}
	}
}

// TestEveryFileHasHeader checks the header and the absence of anything
// machine-specific in the output.
func TestEveryFileHasHeader(t *testing.T) {
	abs, _ := filepath.Abs(goldenDir)
	host, _ := os.Hostname()
	for _, dir := range goldenInputs(t) {
		files, err := generate(dir)
		if err != nil {
			t.Fatal(err)
		}
		for p, data := range files {
			if !bytes.Contains(firstLines(data), []byte(Header)) {
				t.Errorf("%s: %s has no header", dir, p)
			}
			if bytes.Contains(data, []byte(abs)) || (host != "" && bytes.Contains(data, []byte(host))) {
				t.Errorf("%s: %s contains an absolute path or the host name", dir, p)
			}
		}
	}
}

func loadString(t *testing.T, yaml string) (*config.Config, error) {
	t.Helper()
	cfg, _, err := config.Decode(config.ConfigFile, []byte(yaml), t.TempDir())
	return cfg, err
}

func TestPolicyDedupAndPorts(t *testing.T) {
	cfg, err := loadString(t, `
agent: none
devcontainer: {ide: none}
network:
  services: [github]
  domains:
    - api.github.com          # covered by *.github.com on 443
    - host: ssh.github.com    # adds a port: kept with the union
      ports: [22]
    - Example.COM.
    - "*.example.com"
    - host: a.b.example.com
      ports: [443]
`)
	if err != nil {
		t.Fatal(err)
	}
	pol := policy(cfg)
	var got []string
	for _, d := range pol.Domains {
		got = append(got, d.Name+portString(d.Ports)+"<"+strings.Join(d.Sources, ",")+">")
	}
	want := []string{
		"example.com:443<network.domains>",
		"github.com:443<service github>",
		"githubusercontent.com:443<service github>",
		"ssh.github.com:22,443<network.domains>",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("domains:\n got %q\nwant %q", got, want)
	}
}

func portString(ps []uint16) string {
	var b strings.Builder
	for i, p := range ps {
		if i == 0 {
			b.WriteByte(':')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(p)))
	}
	return b.String()
}

func TestCIDRMerge(t *testing.T) {
	cfg, err := loadString(t, `
network:
  cidrs:
    - 198.18.0.0/16
    - 198.18.5.0/24
    - cidr: 198.18.6.0/24
      ports: [443, 8443]
    - 2001:db8::1
`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cidrs(config.NetworkRules{CIDRs: cfg.CIDRs, Ports: cfg.Ports}) {
		got = append(got, c.Prefix.String())
	}
	if want := "198.18.0.0/16 198.18.6.0/24 2001:db8::1/128"; strings.Join(got, " ") != want {
		t.Errorf("cidrs = %q, want %q", got, want)
	}
}

// TestCatalogIsValid checks every catalog entry with the validators that
// user input passes.
func TestCatalogIsValid(t *testing.T) {
	for _, a := range catalog.Agents() {
		if _, err := images.ParseRef(a.BaseImage); err != nil {
			t.Errorf("agent %s: %v", a.Name, err)
		}
		if a.Package != "" && !npm.ValidNewName(a.Package) {
			t.Errorf("agent %s: bad npm name %q", a.Name, a.Package)
		}
		if a.Extension != "" {
			cfg, err := loadString(t, "devcontainer: {extensions: ["+a.Extension+"]}")
			if err != nil || cfg == nil {
				t.Errorf("agent %s: extension: %v", a.Name, err)
			}
		}
		for _, e := range a.Env {
			if _, err := loadString(t, "env: {"+e.Name+": x}"); err != nil {
				t.Errorf("agent %s: %v", a.Name, err)
			}
		}
		// A login file is a plain name in the state directory: the
		// login-copy script takes it as a path below both volumes.
		for _, f := range a.Credentials {
			if !regexp.MustCompile(`^\.?[A-Za-z0-9_][A-Za-z0-9._-]*$`).MatchString(f) || a.StateDir == "" {
				t.Errorf("agent %s: login file %q (state directory %q)", a.Name, f, a.StateDir)
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range catalog.Services() {
		if seen[s.Name] {
			t.Errorf("service %s is there twice", s.Name)
		}
		seen[s.Name] = true
	}
	for _, s := range catalog.Services() {
		for _, d := range s.Domains {
			if _, err := loadString(t, "network: {domains: [\""+d+"\"]}"); err != nil {
				t.Errorf("service %s: %v", s.Name, err)
			}
		}
	}
}

// TestErrorsArePositioned checks that a file full of mistakes reports each
// with file:line:col, sorted, in one run.
func TestErrorsArePositioned(t *testing.T) {
	_, err := loadString(t, "agent: cluade\nnetwork:\n  ports: [0]\n  domains: [\"a b.com\"]\n")
	es, ok := err.(*yamlpos.Errors)
	if !ok || len(es.List) != 3 {
		t.Fatalf("want 3 positioned errors, got %v", err)
	}
	want := []string{
		`agentbox.yaml:1:8: agent: unknown agent "cluade"; did you mean "claude"?`,
		`agentbox.yaml:3:11: network.ports[0]: invalid port 0: must be 1-65535`,
		`agentbox.yaml:4:13: network.domains[0]: invalid domain "a b.com"`,
	}
	for i, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, want[i]) {
			t.Errorf("line %d = %q, want prefix %q", i, line, want[i])
		}
	}
}

// TestOddKeysKeepPositions: keys with spaces, quotes or newlines are quoted
// in the error path and still positioned.
func TestOddKeysKeepPositions(t *testing.T) {
	_, err := loadString(t, "env:\n  \"BAD NAME\": x\n  \"A\\nB\": y\n")
	want := "agentbox.yaml:2:15: env[\"BAD NAME\"]: invalid environment variable name \"BAD NAME\"" +
		"|agentbox.yaml:3:11: env[\"A\\nB\"]: invalid environment variable name \"A\\nB\""
	for i, w := range strings.Split(want, "|") {
		if lines := strings.Split(fmt.Sprint(err), "\n"); i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d: got %q, want prefix %q", i, lines, w)
		}
	}
}

func TestResolverUIDIsReserved(t *testing.T) {
	_, err := loadString(t, "image: {user: {uid: 5353}}\n")
	if err == nil || !strings.Contains(err.Error(), "agentbox.yaml:1:21: image.user.uid: uid 5353 is reserved for the filter resolver") {
		t.Errorf("err = %v", err)
	}
}

// The gateway's uid is reserved too: the ruleset exempts its traffic as
// it does the resolver's, so an agent running as it would pass unfiltered.
func TestGatewayUIDIsReserved(t *testing.T) {
	_, err := loadString(t, "image: {user: {uid: 5354}}\n")
	if err == nil || !strings.Contains(err.Error(), "agentbox.yaml:1:21: image.user.uid: uid 5354 is reserved for the gateway") {
		t.Errorf("err = %v", err)
	}
}

func TestVerifySection(t *testing.T) {
	_, err := loadString(t, `verify:
  allowed: "example.com"
  unlisted_name: "a b"
  unlisted_address: "1.2.3.4"
  resolver: "::1"
  ipv6_address: "1.2.3.4:1"
  metadata_address: "x:80"
`)
	for _, want := range []string{"verify.allowed", "verify.unlisted_name", "verify.unlisted_address", "verify.resolver", "verify.ipv6_address", "verify.metadata_address"} {
		if err == nil || !strings.Contains(err.Error(), want+": ") {
			t.Errorf("no error for %s: %v", want, err)
		}
	}
	cfg, err := loadString(t, "agent: none\nnetwork: {domains: [{host: example.com, ports: [8443]}]}\nverify: {allowed: \"10.0.0.1:22\"}\n")
	if err != nil {
		t.Fatal(err)
	}
	v := VerifyTargets(cfg)
	if v.Allowed != "10.0.0.1:22" || v.UnlistedName != "example.net" || v.MetadataAddress != "169.254.169.254:80" || v.Resolver != "1.1.1.1" {
		t.Errorf("targets %+v", v)
	}
	cfg.Verify.Allowed = ""
	if v := VerifyTargets(cfg); v.Allowed != "example.com:8443" {
		t.Errorf("default allowed = %q", v.Allowed)
	}
	if cfg.MemoryBytes() != 4<<30 {
		t.Errorf("MemoryBytes = %d", cfg.MemoryBytes())
	}
}

// TestSortedUniqueFoldIsASCII: only ASCII letters fold; U+212A KELVIN SIGN
// is not a k (strings.EqualFold says it is).
func TestSortedUniqueFoldIsASCII(t *testing.T) {
	got := sortedUniqueFold([]string{"a.kelvin", "A.Kelvin", "a.\u212Aelvin"})
	if want := []string{"a.kelvin", "a.\u212Aelvin"}; !slices.Equal(got, want) {
		t.Errorf("sortedUniqueFold = %+q, want %+q", got, want)
	}
}

// TestPackagePins: a package listed with two versions, or an always
// installed package given a version, is refused by the loader (so validate
// reports it, not only generate), at the entry that conflicts.
func TestPackagePins(t *testing.T) {
	_, err := loadString(t, "image:\n  packages:\n    - curl=1\n    - jq\n    - curl=2\n    - curl=1\n    - curl\n    - git=1:2.39\n    - jq\n")
	want := []string{
		`agentbox.yaml:5:7: image.packages[2]: package "curl" is listed with two different versions ("curl=1" at 3:7)`,
		`agentbox.yaml:7:7: image.packages[4]: package "curl" is listed with two different versions ("curl=1" at 3:7)`,
		`agentbox.yaml:8:7: image.packages[5]: package "git" is always installed, without a version; it cannot be pinned`,
	}
	if got := fmt.Sprint(err); got != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestDefaultImagesArePlaced: an image that no key selects is not pinned
// at the start of the file; one that the agent key selects, at that key.
func TestDefaultImagesArePlaced(t *testing.T) {
	for src, want := range map[string][]string{
		"devcontainer: {ide: none}\n": {
			`agentbox.yaml:1:1: the default base image of agent none "debian:bookworm-slim" is not pinned: agentbox.lock does not exist; run "agentbox bump"`,
			`agentbox.yaml:1:1: the default egress image "debian:bookworm-slim" is not pinned: agentbox.lock does not exist; run "agentbox bump"`,
		},
		"\nagent: none\n": {
			`agentbox.yaml:1:1: the default egress image "debian:bookworm-slim" is not pinned: agentbox.lock does not exist; run "agentbox bump"`,
			`agentbox.yaml:2:8: agent: the default base image of agent none "debian:bookworm-slim" is not pinned: agentbox.lock does not exist; run "agentbox bump"`,
		},
	} {
		cfg, err := loadString(t, src)
		if err != nil {
			t.Fatal(err)
		}
		errs := &yamlpos.Errors{File: config.ConfigFile}
		plan(cfg, nil, errs)
		if got := fmt.Sprint(errs.Err()); got != strings.Join(want, "\n") {
			t.Errorf("%q:\n got %s\nwant %s", src, got, strings.Join(want, "\n"))
		}
	}
}
