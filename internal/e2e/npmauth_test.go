//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// checkNPMTokenAndCA: an npm registry that wants a token, behind TLS
// signed by a company CA (the registry stand-in with -npm-token and
// -npm-tls-ca), configured the way a user does: the registry and the CA
// in agentbox's settings file, the token in npm's own configuration as
// ${VAR}. bump reads it (its unit test covers the failures); a build fails without the CA, fails without the
// token, and passes with both; the token is in no layer and no line of the
// image's history, the CA is in the agent image for the agent CLIs.
func checkNPMTokenAndCA(e *env, p *project) {
	t := e.t
	e.trackImages(p.name) // the builds below untag the agent image
	token := "e2e-npm-token-" + e.runID
	dir := filepath.Join(e.work, "npmca")
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.MkdirAll(filepath.Join(dir, "config", "agentbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	url := startTokenNPM(e, token, caFile)
	npmrc := filepath.Join(dir, "npmrc")
	nerf := "//" + strings.TrimPrefix(url, "https://")
	if err := os.WriteFile(npmrc, []byte(nerf+":_authToken=${E2E_NPM_TOKEN}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The Debian stand-in, the token registry and its CA, through the
	// settings file.
	writeSettings := func() { e.writeSettings(filepath.Join(dir, "config"), standIns{npm: url, ca: []string{caFile}}) }
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "NPM_CONFIG_USERCONFIG=" + npmrc}
	withToken := append([]string{"E2E_NPM_TOKEN=" + token}, env...)

	// bump --check reads the npm tree through the settings and the token
	// (exit 3: Debian's snapshot moved on; a real bump would rebuild the
	// apt layers). The stand-in serves the same tree, byte for byte.
	writeSettings()
	r := p.agentbox(withToken, "bump", "--check")
	if r.code != 0 && r.code != 3 {
		t.Fatalf("agentbox bump --check against the token registry over TLS: %s", r)
	}
	e.timed("agentbox bump --check against the token registry over TLS", r.took)

	r = p.agentbox(env, "build")
	if !r.failed() || !strings.Contains(r.stdout+r.stderr, "E401") {
		t.Errorf("build without the token: want npm's E401: %s", r)
	}
	r = p.mustAgentbox(withToken, "build")
	e.trackImages(p.name)
	e.timed("agentbox build with the token and the CA (CA and npm layers anew)", r.took)

	image := p.name + "-agent"
	hist := e.docker("history", "--no-trunc", image).stdout
	if strings.Contains(hist, token) {
		t.Errorf("the token is in the image's history")
	}
	n, found := savedImageHolds(e, image, token)
	if found {
		t.Errorf("the token is in a layer of %s (docker save)", image)
	}
	t.Logf("docker save %s: %d MB searched for the token", image, n>>20)
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	r = e.docker("run", "--rm", "--entrypoint", "sh", image, "-c", `cat "$NODE_EXTRA_CA_CERTS"`)
	if strings.TrimSpace(r.stdout) != strings.TrimSpace(string(ca)) {
		t.Errorf("NODE_EXTRA_CA_CERTS in the agent image is not the settings' CA: %q", r.stdout)
	}
	// A build that agentbox does not start (the Dev Containers CLI's
	// docker compose build, from an editor with none of the settings'
	// variables) after agentbox build finds every step built, the CA's
	// included: without the token npm ci would fail (E401), and the image
	// keeps the CA.
	r = e.run(runOpt{dir: p.dir, bare: true}, "docker", "compose", "-f", filepath.Join(".agentbox", "docker-compose.yml"), "-p", p.name, "build")
	if r.failed() {
		t.Errorf("docker compose build with none of the settings' variables, after agentbox build: %s", r)
	}
	r = e.docker("run", "--rm", "--entrypoint", "sh", image, "-c", `cat "$NODE_EXTRA_CA_CERTS"`)
	if strings.TrimSpace(r.stdout) != strings.TrimSpace(string(ca)) {
		t.Errorf("after docker compose build with none of the settings' variables, NODE_EXTRA_CA_CERTS in the agent image is not the settings' CA: %q", r.stdout)
	}
	// Without the CA, npm refuses the registry: the build above passed
	// because of ca_certificates. (npm of the node image, which trusts its
	// own roots only, no retries: Debian's nodejs of this image trusts the
	// system's store, where the build put the CA; a build without the CA
	// fails the same way, after two minutes of npm's retries.)
	r = e.run(runOpt{}, "docker", "run", "--rm", "--entrypoint", "sh", "agentbox-e2e/node:24-bookworm-slim", "-c",
		`cd /tmp && npm view agentbox-nothing --registry "$1" --fetch-retries=0`, "sh", url)
	if !r.failed() || !strings.Contains(r.stdout+r.stderr, "SELF_SIGNED_CERT_IN_CHAIN") {
		t.Errorf("npm without the settings' CA: want SELF_SIGNED_CERT_IN_CHAIN: %s", r)
	}
}

// savedImageHolds streams `docker save image` and reports its size and
// whether s occurs in it.
func savedImageHolds(e *env, image, s string) (int64, bool) {
	cmd := exec.CommandContext(e.ctx, "docker", "save", image)
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	var total int64
	found := false
	buf := make([]byte, 1<<20)
	var carry []byte
	for {
		k, err := out.Read(buf)
		if k > 0 {
			total += int64(k)
			chunk := append(carry, buf[:k]...)
			found = found || bytes.Contains(chunk, []byte(s))
			carry = append([]byte(nil), chunk[max(0, len(chunk)-len(s)):]...)
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		e.t.Fatalf("docker save %s: %v", image, err)
	}
	return total, found
}

// startTokenNPM starts a second npm stand-in on the bridge: the same tree,
// over TLS with a new test CA (its certificate in caFile), wanting token.
func startTokenNPM(e *env, token, caFile string) string {
	t := e.t
	bin := filepath.Join(e.work, "registry") // built by startRegistries
	cmd := exec.Command(bin, "-addr", "", "-npm-addr", net.JoinHostPort(e.bridgeGW, "0"),
		"-npm-package", npmPackage+"="+npmVersion, "-npm-tree", "-npm-token", token, "-npm-tls-ca", caFile)
	var log syncBuffer
	stdout := startProcess(t, cmd, &log)
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "npm "); ok {
				line <- u
			}
		}
		close(line)
	}()
	select {
	case u, ok := <-line:
		if !ok {
			t.Fatalf("the token npm registry exited: %s", log.String())
		}
		return u
	case <-time.After(60 * time.Second):
		t.Fatalf("the token npm registry did not start: %s", log.String())
	}
	return ""
}
