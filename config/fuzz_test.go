package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbox-dev/agentbox/internal/testing/configtest"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// FuzzDecode feeds arbitrary bytes to the loader, on FuzzLoad's seeds. It
// must never panic, every error must be positioned in agentbox.yaml, and it
// must accept no value, other than an environment value, that is not ASCII.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("../testdata/golden", "*", ConfigFile))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	for _, seed := range configtest.FuzzSeeds() {
		f.Add(seed)
	}
	dir := f.TempDir()
	placed := configtest.Placed(ConfigFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, err := Decode(ConfigFile, data, dir)
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
	})
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
