package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
)

// TestValidateAndGenerateAgree: whatever validate accepts, generate
// generates (given a lock), and whatever validate refuses, generate refuses
// with the same errors and without writing anything. Large files are where
// they parted: 200,000 variables in env passed validate and failed generate
// with compose-go's "maximum node visit limit" as an internal error.
func TestValidateAndGenerateAgree(t *testing.T) {
	env := func(n int, value string) string {
		var b strings.Builder
		b.WriteString("agent: claude\nenv:\n")
		for i := range n {
			fmt.Fprintf(&b, "  VAR_%06d: %s\n", i, value)
		}
		return b.String()
	}
	domains := func(n int) string {
		var b strings.Builder
		b.WriteString("network:\n  domains:\n")
		for i := range n {
			// As many ports of names as the gateway listens on (443 is one).
			fmt.Fprintf(&b, "    - {host: d%d.example.com, ports: [%d]}\n", i, 1000+i%(firewall.GatewayListenMax-1))
		}
		return b.String()
	}
	big := "BIG: " + strings.Repeat("x", config.MaxEnvString-len("BIG=")-1) + "\n"
	for _, tt := range []struct {
		name, src string
		valid     bool
	}{
		{"200000 variables, 22 MB", env(200000, strings.Repeat("v", 96)), false},
		{"at the limits", env(config.MaxEntries-1, "value") + "  " + big + domains(config.MaxEntries), true},
		{"one variable too many", env(config.MaxEntries+1, "value"), false},
		{"one byte too many in an environment string", "agent: claude\nenv:\n  " + big[:len(big)-1] + "x\n", false},
		{"one byte too many in the file", "agent: claude\n#" + strings.Repeat("x", config.MaxFileSize-len("agent: claude\n#")) + "\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := setupCase(t, filepath.Join(goldenDir, "agent-claude"))
			writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte(tt.src))
			before := readAll(t, dir)
			_, vErr, vCode := runIn(t, dir, "validate")
			_, gErr, gCode := runIn(t, dir, "generate")
			if tt.valid {
				if vCode != exitOK || gCode != exitOK {
					t.Fatalf("validate: exit %d %.300s\ngenerate: exit %d %.300s", vCode, vErr, gCode, gErr)
				}
				return
			}
			if vCode != exitError || gCode != exitError || vErr != gErr {
				t.Errorf("validate: exit %d\n%.300s\ngenerate: exit %d\n%.300s", vCode, vErr, gCode, gErr)
			}
			if !strings.HasPrefix(gErr, "agentbox.yaml:") || strings.Contains(gErr, "internal error") {
				t.Errorf("not a positioned error of agentbox.yaml: %.300s", gErr)
			}
			if !sameTree(before, readAll(t, dir)) {
				t.Error("a failed generate changed files")
			}
		})
	}
}
