package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/firewall"
)

// portList is "from, from+1, ..., to-1".
func portList(from, to int) string {
	var ps []string
	for p := from; p < to; p++ {
		ps = append(ps, fmt.Sprint(p))
	}
	return strings.Join(ps, ", ")
}

// TestLimitErrors: one past each limit is an error at its place.
func TestLimitErrors(t *testing.T) {
	items := func(key, indent, item string, n int) string {
		return key + ":\n" + strings.Repeat(indent+"- "+item+"\n", n)
	}
	over := MaxEntries + 1
	tooMany := fmt.Sprintf("%d entries; at most %d are allowed", over, MaxEntries)
	envOver := "env:\n"
	for i := range over {
		envOver += fmt.Sprintf("  V%d: x\n", i)
	}
	comments := strings.Repeat("# "+strings.Repeat("x", 97)+"\n", MaxFileSize/100+1) // 100 bytes a line
	tests := []struct{ name, src, want string }{
		{"file size", "agent: claude\n" + comments,
			fmt.Sprintf("agentbox.yaml:%d:%d: the file is larger than 1 MiB (1048576 bytes), the most agentbox reads; it passes the limit here",
				2+(MaxFileSize-14)/100, 1+(MaxFileSize-14)%100)},
		{"env", envOver, "agentbox.yaml:2:3: env: " + tooMany},
		{"env string", "env:\n  A: ok\n  LONG: " + strings.Repeat("x", MaxEnvString-len("LONG=")) + "\n",
			"agentbox.yaml:3:9: env.LONG: LONG=… with its terminating NUL is 131073 bytes; Linux takes at most 131072 (128 KiB) in one environment string"},
		{"packages", "image:\n  " + items("packages", "    ", "jq", over), "agentbox.yaml:3:5: image.packages: " + tooMany},
		{"services", "network:\n  " + items("services", "    ", "github", over), "agentbox.yaml:3:5: network.services: " + tooMany},
		{"domains", "network:\n  " + items("domains", "    ", "example.com", over), "agentbox.yaml:3:5: network.domains: " + tooMany},
		{"domain ports", "network:\n  domains:\n    - host: example.com\n      " + items("ports", "        ", "443", over),
			"agentbox.yaml:5:9: network.domains[0].ports: " + tooMany},
		{"ports of names", "network:\n  domains:\n    - {host: a.example, ports: [80]}\n    - {host: b.example, ports: [" + portList(1000, 1000+firewall.GatewayListenMax-1) + "]}\n",
			fmt.Sprintf("agentbox.yaml:4:7: network.domains[1]: the domains' ports come to %d here; the gateway, which checks the name of every connection to an allowed name, listens on at most %d ports: list a service on more ports by address (network.cidrs)", firewall.GatewayListenMax+1, firewall.GatewayListenMax)},
		{"cidrs", "network:\n  " + items("cidrs", "    ", "198.18.0.1", over), "agentbox.yaml:3:5: network.cidrs: " + tooMany},
		{"cidr ports", "network:\n  cidrs:\n    - cidr: 198.18.0.1\n      " + items("ports", "        ", "443", over),
			"agentbox.yaml:5:9: network.cidrs[0].ports: " + tooMany},
		{"ports", "network:\n  " + items("ports", "    ", "443", over), "agentbox.yaml:3:5: network.ports: " + tooMany},
		{"readonly", "workspace:\n  " + items("readonly", "    ", "docs", over), "agentbox.yaml:3:5: workspace.readonly: " + tooMany},
		{"writable", "workspace:\n  " + items("writable", "    ", ".vscode", over), "agentbox.yaml:3:5: workspace.writable: " + tooMany},
		{"hidden", "workspace:\n  " + items("hidden", "    ", ".env", over), "agentbox.yaml:3:5: workspace.hidden: " + tooMany},
		{"extensions", "devcontainer:\n  " + items("extensions", "    ", "a.b", over), "agentbox.yaml:3:5: devcontainer.extensions: " + tooMany},
		{"run env", "run:\n  " + items("env", "    ", "A", over), "agentbox.yaml:3:5: run.env: " + tooMany},
		{"path", "workspace: {path: /w/" + strings.Repeat("a", 256) + "}\n", "agentbox.yaml:1:19: workspace.path: invalid path \"/w/aaaa"},
		{"readonly path", "workspace: {readonly: [" + strings.Repeat("a/", 2048) + "a]}\n", "agentbox.yaml:1:24: workspace.readonly[0]: invalid path \"a/a/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Decode(ConfigFile, []byte(tt.src), t.TempDir())
			got := fmt.Sprint(err)
			if !strings.HasPrefix(got, tt.want) || strings.Count(got, "\n") > 0 {
				if len(got) > 300 {
					got = got[:300] + "…"
				}
				t.Errorf("got  %s\nwant %s (one error)", got, tt.want)
			}
		})
	}
}
