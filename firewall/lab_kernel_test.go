package firewall_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/shquote"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// kernelFeatures are the features that the entrypoint probes (its function
// features), in its order, each with what the kernel stand-in refuses when
// the feature is missing: every nft batch whose text matches.
var kernelFeatures = []struct{ name, refuse string }{
	{"nftables", `type filter hook`},
	{"named counters", `counter name`},
	{"reject", `reject with`},
	{"conntrack", `ct state`},
	{"conntrack marks", `ct mark`},
	{"NAT redirect", `redirect to`},
	{"conntrack zones", `ct zone`},
	{"NFLOG", `log prefix "[^"]*" group`},
	{"named limits", `limit name`},
	{"interval sets", `flags interval`},
	{"set element timeouts", `flags timeout|timeout [0-9]`},
	{"interval sets of concatenations with timeouts", `flags interval,timeout`},
	{"IPv6 extension headers", `exthdr`},
}

// withoutFeature returns spec with the egress's nft replaced by a stand-in
// for a kernel that lacks a feature. Kernel features cannot be unloaded
// here, so the stand-in sits where the image has nft, in the egress's own
// mount namespace: it refuses every batch whose text (its arguments, its
// input and the files that includes) matches refuse, with the error the
// kernel gives (EOPNOTSUPP), and hands every other to the real nft. Every
// nft of the entrypoint meets it, as every one would meet the kernel.
// refuse "" refuses nothing.
func withoutFeature(t testing.TB, spec netlab.Spec, refuse string) netlab.Spec {
	t.Helper()
	nft, err := exec.LookPath("nft")
	if err != nil {
		t.Fatal(err)
	}
	real, err := os.ReadFile(nft)
	if err != nil {
		t.Fatal(err)
	}
	shim := fmt.Sprintf(`#!/bin/bash
refuse=%s
real=%s
text="$*" input="" stdin=0
if [[ " $* " == *" -f - "* ]]; then
	stdin=1
	input=$(cat; echo x)
	input=${input%%x}
	text+=$'\n'$input
	while IFS= read -r line; do
		if [[ $line =~ ^include\ \"(.+)\"$ ]]; then
			text+=$'\n'$(<"${BASH_REMATCH[1]}")
		fi
	done <<<"$input"
fi
if [[ -n $refuse && $text =~ $refuse ]]; then
	echo "/dev/stdin:1:1-1: Error: Could not process rule: Operation not supported" >&2
	exit 1
fi
if ((stdin)); then
	exec "$real" "$@" < <(printf '%%s' "$input")
fi
exec "$real" "$@"
`, shquote.Word(refuse), shquote.Word(nft+".kernel"))
	files := map[string]netlab.File{}
	for p, f := range spec.Files {
		files[p] = f
	}
	files[nft] = netlab.File{Data: []byte(shim), Mode: 0o755}
	files[nft+".kernel"] = netlab.File{Data: real, Mode: 0o755}
	spec.Files = files
	return spec
}

// TestLabKernelFeatures removes each feature that the firewall needs of the
// kernel in turn and checks that the entrypoint refuses to start, names the
// feature and what it is for, starts no resolver and leaves egress closed;
// with every feature there, it starts and leaves no scratch table behind.
func TestLabKernelFeatures(t *testing.T) {
	l := newLab(t)
	// The stand-in's list is the entrypoint's.
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\tfeature "([^"]+)"`).FindAllStringSubmatch(string(l.files["entrypoint.sh"]), -1) {
		names = append(names, m[1])
	}
	var want []string
	for _, f := range kernelFeatures {
		want = append(want, f.name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("the entrypoint probes %q; the test removes %q", names, want)
	}
	l.open()

	t.Run("AllThere", func(t *testing.T) {
		l := l.on(t)
		p := l.start(withoutFeature(t, l.egressSpec(), ""))
		l.ready(p)
		l.works()
		// The keeper deletes the scratch table just after ready.
		deadline := time.Now().Add(5 * time.Second)
		for tables := l.nft("list", "tables"); strings.Contains(tables, "agentbox_probe"); tables = l.nft("list", "tables") {
			if time.Now().After(deadline) {
				t.Fatalf("a scratch table is left 5 s after ready:\n%s", tables)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if code := p.Stop(5 * time.Second); code != 0 {
			t.Errorf("the entrypoint exited with %d on SIGTERM, want 0", code)
		}
	})
	for _, f := range kernelFeatures {
		t.Run(strings.ReplaceAll(f.name, " ", "_"), func(t *testing.T) {
			l := l.on(t)
			p := l.start(withoutFeature(t, l.egressSpec(), f.refuse))
			if code, err := p.Wait(10 * time.Second); err != nil || code == 0 {
				t.Fatalf("the entrypoint exited with %d (%v), want a failure; output:\n%s", code, err, p.Output())
			}
			out := p.Output()
			for _, want := range []string{
				"error: this kernel lacks " + f.name + ", which the firewall needs for ",
				"(nftables: Could not process rule: Operation not supported)",
				"error: loading " + firewall.RulesPath + " failed",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "dnsmasq[") {
				t.Errorf("dnsmasq started:\n%s", out)
			}
			if tables := l.nft("list", "tables"); strings.Contains(tables, "agentbox_probe") {
				t.Errorf("a scratch table is left:\n%s", tables)
			}
			if f.name == "nftables" {
				// Without nftables nothing can close egress either: the
				// entrypoint says so and exits, and the sandbox never gets
				// healthy, so the agent never starts.
				if !strings.Contains(out, "error: could not close egress") {
					t.Errorf("the output lacks the failed lockdown:\n%s", out)
				}
				return
			}
			if !strings.Contains(out, "lockdown table loaded") {
				t.Errorf("the output lacks the lockdown:\n%s", out)
			}
			l.assertClosed()
		})
	}
}
