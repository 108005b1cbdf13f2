//go:build e2e

package e2e

import (
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// What the tests of the real agent CLIs share: the npm registry for the
// image builds, and the stand-in of their base image.

// npmRegistryProxy serves npm's configured registry on the bridge, in plain
// HTTP, for the image builds: a build container reaches the host there and
// trusts no certificate authority but its image's. It skips (or under
// CI=true fails) when the registry does not answer for pkg.
func npmRegistryProxy(e *env, pkg string) string {
	t := e.t
	out, err := exec.Command("npm", "config", "get", "registry").Output()
	target, perr := url.Parse(strings.TrimSpace(string(out)))
	if err != nil || perr != nil || target.Host == "" {
		t.Fatalf("npm config get registry: %v %v %q", err, perr, out)
	}
	res, err := http.Get(target.JoinPath(strings.ReplaceAll(pkg, "/", "%2f")).String())
	if err != nil || res.StatusCode != http.StatusOK {
		why := "no answer"
		if err != nil {
			why = err.Error()
		}
		if res != nil {
			why = res.Status
			res.Body.Close()
		}
		testenv.Unavailable(t, "the npm registry does not answer for "+pkg+" ("+why+")")
	}
	res.Body.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(e.bridgeGW, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	rp := httputil.NewSingleHostReverseProxy(target)
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		r.Host = target.Host
		mu.Lock()
		n++
		mu.Unlock()
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		mu.Lock()
		t.Logf("the npm registry proxy served %d requests", n)
		mu.Unlock()
	})
	return "http://" + ln.Addr().String() + "/"
}

// pushNodeImage pushes the stand-in of node:24-bookworm-slim
// (scripts/e2e/node-image.sh) to the test's registry, once per run, and
// returns its REGISTRY/NAME:TAG, whose tag goes at the end of the test.
// The subtests that run in parallel wait for the first one's push: the
// script builds the image when it is missing and writes its logs in one
// place.
func pushNodeImage(e *env, who string) string {
	t := e.t
	e.rec.node.Lock()
	defer e.rec.node.Unlock()
	if e.rec.nodeImage != "" {
		return e.rec.nodeImage
	}
	r := e.must(runOpt{dir: e.root}, "bash", "scripts/e2e/node-image.sh", e.registry)
	m := digestRef.FindStringSubmatch(strings.TrimSpace(r.stdout))
	if m == nil {
		t.Fatalf("scripts/e2e/node-image.sh printed %q, want REF@sha256:...", r.stdout)
	}
	e.rec.mu.Lock()
	e.rec.tags = append(e.rec.tags, m[1])
	e.rec.mu.Unlock()
	e.rec.nodeImage = m[1]
	e.timed(who+": push the node image to the local registry", r.took)
	return m[1]
}

// askedNames returns the names asked of the filter resolver in an egress
// log, but agentbox's own probes.
func askedNames(log string) []string {
	set := map[string]bool{}
	for _, m := range regexp.MustCompile(`query\[\w+\] (\S+) from 127\.0\.0\.1`).FindAllStringSubmatch(log, -1) {
		if !strings.Contains(m[1], "agentbox-probe") {
			set[m[1]] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
