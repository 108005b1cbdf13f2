package netlab

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
)

// The test forges (the lab's TLSServer with Git, the e2e's fakenet git):
// git's own http-backend over the bare repositories OWNER/NAME.git under a
// root, which GitRepo makes and GitRef reads.

// GitBackend serves the bare repositories under root as a forge does: git
// http-backend (/usr/bin/git) through CGI, every repository exported. A
// chunked request body, which CGI does not take (net/http/cgi answers 400),
// is read whole first, up to 64 MiB: a large push comes in chunks, which a
// real forge takes.
func GitBackend(root string) http.HandlerFunc {
	backend := &cgi.Handler{Path: "/usr/bin/git", Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength < 0 {
			body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
		}
		backend.ServeHTTP(w, r)
	}
}

// GitRepo makes the bare repository repo (OWNER/NAME) under root with one
// commit on main, which takes pushes over HTTP without a user
// (http.receivepack: the forge itself judges who may push).
func GitRepo(root, repo string) error {
	bare := filepath.Join(root, repo+".git")
	src := filepath.Join(root, "src-"+strings.ReplaceAll(repo, "/", "-"))
	for _, argv := range [][]string{
		{"init", "-q", "--bare", "-b", "main", bare},
		{"-C", bare, "config", "http.receivepack", "true"},
		{"init", "-q", "-b", "main", src},
		{"-C", src, "-c", "user.name=forge", "-c", "user.email=forge@agentbox.invalid", "commit", "-q", "--allow-empty", "-m", "first of " + repo},
		{"-C", src, "push", "-q", bare, "main"},
	} {
		if out, err := exec.Command("git", argv...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v\n%s", argv, err, out)
		}
	}
	return nil
}

// GitRef is what the bare repository repo under root has at ref, or "".
func GitRef(root, repo, ref string) string {
	out, err := exec.Command("git", "-C", filepath.Join(root, repo+".git"), "rev-parse", "-q", "--verify", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
