package generator

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// FuzzLoad feeds arbitrary bytes to the loader. It must never panic; every
// error must be positioned in agentbox.yaml; and whatever it accepts must
// plan, render and pass every output check, since accepted values reach
// Dockerfiles, shell, compose and firewall configuration.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(goldenDir, "*", ConfigFile))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("agent: claude\nenv: {A: \"$(id)\\n'\"}\n"))
	f.Add([]byte("network: {domains: [{host: a.b, ports: [1, 65535]}], cidrs: [::1]}\n"))
	f.Add([]byte("image: {packages: [curl=1, curl=2]}\n"))
	f.Add([]byte("image: {packages: [git=1]}\n"))
	// What the YAML parser refuses without a line: bytes that are not
	// UTF-8, NUL and other control characters, UTF-16.
	f.Add([]byte("agent: claude\nname: \"a\xffb\"\n"))
	f.Add([]byte("agent: claude\nenv: {X: \"a\x00b\"}\n"))
	f.Add([]byte("agent: claude\r# \x1b[31m\n"))
	f.Add([]byte("\xfe\xff\x00a\x00:\x00 \x00b\x00\n"))
	// Look-alikes: characters that Unicode case folding turns into ASCII.
	for _, s := range lookAlikes {
		f.Add([]byte("network: {domains: [\"" + s + "ubernetes.io\"]}\n"))
		f.Add([]byte("resources: {memory: \"8192" + s + "\"}\n"))
		f.Add([]byte("name: \"" + s + "elvin\"\ndevcontainer: {extensions: [\"a." + s + "\"]}\n"))
		f.Add([]byte("image: {packages: [\"" + s + "url\"]}\nworkspace: {path: \"/" + s + "\", readonly: [\"" + s + "\"]}\n"))
		f.Add([]byte("agent: \"cl" + s + "ude\"\nnetwork: {services: [\"git" + s + "ub\"]}\nenv: {\"" + s + "\": x}\n"))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := decodeConfig(ConfigFile, data, dir)
		if err != nil {
			es, ok := err.(*yamlpos.Errors)
			if !ok {
				t.Fatalf("unpositioned error type %T: %v", err, err)
			}
			for _, line := range strings.Split(es.Error(), "\n") {
				if !placed.MatchString(line) {
					t.Fatalf("error without a place (file:line:col, or file:line for a YAML syntax error): %q", line)
				}
			}
			return
		}
		if v, ok := nonASCIIValue(data); ok {
			t.Fatalf("accepted a value that is not ASCII: %+q\n%s", v, data)
		}
		errs := &yamlpos.Errors{File: ConfigFile}
		p := plan(cfg, fakeLock(cfg), errs)
		if err := errs.Err(); err != nil {
			t.Fatalf("the loader (and so validate) accepts what plan refuses with a complete lock: %v\n%s", err, data)
		}
		files, err := render(p)
		if err != nil {
			t.Fatalf("accepted config does not render: %v\n%s", err, data)
		}
		if err := check(files, dir, p.Name); err != nil {
			t.Fatalf("accepted config renders files that fail their checks: %v\n%s", err, data)
		}
	})
}

// placed is an error line with its place: file:line:col, or file:line for a
// YAML syntax error (the parser gives no column).
var placed = regexp.MustCompile(`^` + regexp.QuoteMeta(ConfigFile) + `:[1-9][0-9]*:(([1-9][0-9]*: )| invalid YAML: )`)

// fakeLock pins every image and package cfg needs.
func fakeLock(cfg *Config) *images.Lock {
	const d = "sha256:" + "abababababababababababababababababababababababababababababababab"
	l := &images.Lock{FormatVersion: images.LockVersion, Images: map[string]string{}, NPM: map[string]*npm.Tree{},
		Debian: &images.Debian{Snapshot: "20261101T000000Z", SecuritySnapshot: "20261101T060000Z",
			Releases: map[string]string{}, Pins: map[string]map[string]images.ArchPins{"bookworm": {}}}}
	for _, r := range []*images.Ref{cfg.Base, cfg.Egress} {
		if r != nil {
			l.Images[r.Tagged()] = d
			l.Debian.Releases[r.Tagged()] = "bookworm"
		}
	}
	l.Images[cfg.Agent.BaseImage] = d
	l.Images[catalog.DefaultEgressImage] = d
	l.Debian.Releases[cfg.Agent.BaseImage] = "bookworm"
	l.Debian.Releases[catalog.DefaultEgressImage] = "bookworm"
	agent, node, egress := DebianNames(cfg)
	versions := map[string]string{}
	for _, n := range slices.Concat(agent, node, egress) {
		name, v, _ := strings.Cut(n, "=")
		if v == "" {
			v = "1.0-1"
		}
		versions[name] = v
	}
	for _, arch := range images.Architectures {
		l.Debian.Pins["bookworm"][arch] = images.ArchPins{Closure: "sha256:" + strings.Repeat("cd", 32), Versions: versions}
	}
	if pkg := cfg.Agent.Package; pkg != "" {
		l.NPM[pkg] = &npm.Tree{Name: pkg, Version: "1.0.0", Packages: map[string]npm.Entry{
			"node_modules/" + pkg: {Version: "1.0.0", Integrity: "sha512-" + strings.Repeat("A", 86) + "==", Bin: map[string]string{"cli": "cli.js"}}}}
	}
	return l
}

// lookAlikes are characters that strings.ToLower, ToUpper or EqualFold turn
// into ASCII letters, or that look like them.
var lookAlikes = []string{
	"\u212A", // KELVIN SIGN: ToLower gives k
	"\u212B", // ANGSTROM SIGN: ToLower gives U+00E5
	"\u0130", // LATIN CAPITAL LETTER I WITH DOT ABOVE: ToLower gives i
	"\u0131", // LATIN SMALL LETTER DOTLESS I: ToUpper gives I
	"\u017F", // LATIN SMALL LETTER LONG S: EqualFold with s
	"\uFF4B", // FULLWIDTH LATIN SMALL LETTER K
	"\u043A", // CYRILLIC SMALL LETTER KA
}

// nonASCIIValue returns a value of data, other than an environment value,
// that is not ASCII. Every such value is refused: names, sizes, paths and ids
// are ASCII grammars, and a check made after case folding would let U+212A
// KELVIN SIGN through as a k.
func nonASCIIValue(data []byte) (string, bool) {
	var w wireFile
	if _, err := yamlpos.Decode(ConfigFile, data, &w); err != nil {
		return "", false
	}
	vals := append([]string{}, w.Image.Packages...)
	vals = append(vals, w.Network.Services...)
	vals = append(vals, w.Workspace.ReadOnly...)
	vals = append(vals, w.Devcontainer.Extensions...)
	for _, d := range w.Network.Domains {
		vals = append(vals, d.Host)
	}
	for _, c := range w.Network.CIDRs {
		vals = append(vals, c.CIDR)
	}
	for name := range w.Env {
		vals = append(vals, name)
	}
	v := w.Verify
	for _, p := range []*string{w.Name, w.Agent, w.Image.Base, w.Egress.Image, w.Resources.Memory, w.Workspace.Path,
		w.Devcontainer.IDE, v.Allowed, v.UnlistedName, v.UnlistedAddress, v.Resolver, v.IPv6Address, v.MetadataAddress} {
		if p != nil {
			vals = append(vals, *p)
		}
	}
	for _, s := range vals {
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf {
				return s, true
			}
		}
	}
	return "", false
}
