package firewall

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// withGateway returns p with the gateway.
func withGateway(p Policy) Policy {
	p.Gateway = true
	return p
}

// TestGatewayRender: with Policy.Gateway, every port of allowed names has a
// listener, in the ruleset's map and in haproxy.cfg, with the port's names
// and only them; the allow sets accept the gateway's uid only.
func TestGatewayRender(t *testing.T) {
	files := mustRender(t, withGateway(policies["rich"]))
	cfg, rules := string(files[gatewayFile]), string(files[rulesFile])
	ports, err := gatewayPorts(mustNormalize(t, withGateway(policies["rich"])))
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) < 2 {
		t.Fatalf("the rich policy has %d ports of names, want several", len(ports))
	}
	for i, g := range ports {
		if g.Listen != GatewayListenBase+i {
			t.Errorf("port %d listens on %d, want %d", g.Port, g.Listen, GatewayListenBase+i)
		}
		for _, want := range []string{
			"frontend port_" + itoa(g.Port) + "\n\tbind 127.0.0.1:" + itoa(g.Listen) + " name v4\n.if defined(" + gatewayV6Env + ")\n\tbind [::1]:" + itoa(g.Listen) + " name v6 v6only\n.endif\n",
			"set-dst-port int(" + itoa(g.Port) + ")",
		} {
			if !strings.Contains(cfg, want) {
				t.Errorf("haproxy.cfg lacks %q", want)
			}
		}
		if want := itoa(g.Port) + " : " + itoa(g.Listen) + ","; !strings.Contains(rules, want) {
			t.Errorf("rules.nft's gateway map lacks %q", want)
		}
	}
	for _, d := range policies["rich"].Domains {
		if strings.Count(cfg, "-m end ."+d.Name+" ") != len(d.Ports) && strings.Count(cfg, "-m end ."+d.Name+"\n") != len(d.Ports) {
			t.Errorf("haproxy.cfg lists .%s %d times, want once for each of its ports %v", d.Name, strings.Count(cfg, "."+d.Name), d.Ports)
		}
	}
	for _, line := range strings.Split(rules, "\n") {
		if strings.Contains(line, "@allow_") && strings.HasSuffix(line, "accept") && !strings.Contains(line, "meta skuid "+itoa(GatewayUID)+" ") {
			t.Errorf("rules.nft accepts other uids than the gateway's at the allow sets: %s", strings.TrimSpace(line))
		}
	}
	if _, ok := mustRender(t, policies["rich"])[gatewayFile]; ok {
		t.Error("Render wrote haproxy.cfg without Policy.Gateway")
	}
	for _, name := range []string{"empty", "none", "open"} {
		if _, ok := mustRender(t, withGateway(policies[name]))[gatewayFile]; ok {
			t.Errorf("policy %s (no names) has a gateway", name)
		}
	}
}

// TestGatewayTools runs nft -c, haproxy -c and bash -n on what Render
// writes with the gateway.
func TestGatewayTools(t *testing.T) {
	for _, name := range []string{"small", "rich"} {
		t.Run(name, func(t *testing.T) {
			files := mustRender(t, withGateway(policies[name]))
			dir := writeFiles(t, files)
			run(t, "", requireTool(t, "bash", false), "-n", filepath.Join(dir, entrypointFile))
			checkHaproxy(t, files, nil)
			run(t, "", requireTool(t, "nft", true), "-c", "-f", filepath.Join(dir, rulesFile))
		})
	}
}

func mustNormalize(t *testing.T, p Policy) Policy {
	t.Helper()
	n, err := normalize(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }
