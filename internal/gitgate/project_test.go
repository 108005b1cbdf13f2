package gitgate

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"agentbox/":           "refs/heads/agentbox/",
		"agent":               "refs/heads/agent/",
		"refs/agentbox/x":     "refs/agentbox/x/",
		"refs/remotes/agent/": "refs/remotes/agent/",
	} {
		if got := RefPrefix(in); got != want {
			t.Errorf("RefPrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// FetchProject takes the bundle's branches under the prefix with the
// policy the bundle maker returns, from the top of the repository only.
func TestFetchProject(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "feature")
	commitFiles(t, agent, map[string]string{"src/a.go": "package a\n", "docs/x.md": "x\n"}, "work")
	bundle := func(ctx context.Context, w io.Writer) (Policy, error) {
		f, err := os.Open(bundleOf(t, agent))
		if err != nil {
			return Policy{}, err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return Policy{ReadOnly: []string{"docs"}}, err
	}
	res, err := FetchProject(context.Background(), host, DefaultPrefix, bundle)
	if err != nil {
		t.Fatal(err)
	}
	if b := byName(t, res, "feature"); b.Status != StatusRefused {
		t.Errorf("feature changes the read-only docs/: %s", b.Status)
	}
	if _, err := FetchProject(context.Background(), filepath.Join(host, "docs"), DefaultPrefix, bundle); err == nil || !strings.Contains(err.Error(), "top of its git repository") {
		t.Errorf("below the top: %v", err)
	}
	failed := errors.New("no sandbox")
	if _, err := FetchProject(context.Background(), host, DefaultPrefix, func(context.Context, io.Writer) (Policy, error) { return Policy{}, failed }); !errors.Is(err, failed) {
		t.Errorf("a bundle maker's error: %v", err)
	}
}
