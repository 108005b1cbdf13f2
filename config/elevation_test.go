package config

import (
	"strings"
	"testing"
)

// TestElevationNeverNames: elevation.never takes names beside CIDRs, and a
// name grant that overlaps one (the same name, one below it, or one above
// it) is refused.
func TestElevationNeverNames(t *testing.T) {
	cfg, err := loadString(t, "version: 1\nagent: none\nelevation:\n  never: [198.18.7.0/24, \"*.Corp.Example\", secret.example.com]\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.ElevationNeverNames, " "); got != "corp.example secret.example.com" || len(cfg.ElevationNever) != 1 {
		t.Fatalf("never: names %q, CIDRs %v", got, cfg.ElevationNever)
	}
	for name, refused := range map[string]bool{
		"corp.example":          true,
		"git.corp.example":      true,
		"example.com":           true, // covers secret.example.com
		"a.secret.example.com":  true,
		"notcorp.example":       false,
		"docs.example.com":      false,
		"secret.example.com.io": false,
	} {
		err := RefusedName(cfg, name)
		if (err != nil) != refused {
			t.Errorf("RefusedName(%q) = %v, want refused %v", name, err, refused)
		}
	}
	if _, err := loadString(t, "version: 1\nagent: none\nelevation:\n  never: [exa_mple.com]\n"); err == nil || !strings.Contains(err.Error(), `invalid domain "exa_mple.com"`) {
		t.Errorf("a bad name in elevation.never: %v", err)
	}
}
