package config

import (
	"slices"
	"strings"
	"testing"
)

func TestGitForges(t *testing.T) {
	cfg, err := loadString(t, `
secrets: [GITHUB_TOKEN]
git:
  forges:
    - host: GitHub.com
      token: GITHUB_TOKEN
      repos: [Acme/App.git]
      push:
        - repo: acme/tool
          branches: ["agent/*", fix-x]
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []GitForge{{Host: "github.com", Token: "GITHUB_TOKEN", Repos: []string{"acme/app"},
		Push: []GitPush{{Repo: "acme/tool", Branches: []string{"agent/*", "fix-x"}}}}}
	cfg.GitForges[0].HostPos = want[0].HostPos
	if !slices.EqualFunc(cfg.GitForges, want, func(a, b GitForge) bool {
		return a.Host == b.Host && a.Token == b.Token && slices.Equal(a.Repos, b.Repos) && len(a.Push) == 1 &&
			a.Push[0].Repo == b.Push[0].Repo && slices.Equal(a.Push[0].Branches, b.Push[0].Branches)
	}) {
		t.Errorf("git.forges: %+v, want %+v", cfg.GitForges, want)
	}
	for yaml, wantErr := range map[string]string{
		"git: {forges: [{host: '*.github.com'}]}":                                                                                     "1:23: git.forges[0].host: invalid forge",
		"git: {forges: [{host: github.com}, {host: github.com}]}":                                                                     "git.forges[1].host: github.com is listed twice",
		"git: {forges: [{host: github.com, token: GITHUB_TOKEN}]}":                                                                    `git.forges[0].token: "GITHUB_TOKEN" is in neither secrets nor run.env`,
		"secrets: [ANTHROPIC_API_KEY]\ngit: {forges: [{host: github.com, token: ANTHROPIC_API_KEY}]}":                                 "is a model key",
		"git: {forges: [{host: github.com, repos: [acme/app]}]}":                                                                      "git.forges[0]: repos and push need a token",
		"secrets: [T]\ngit: {forges: [{host: github.com, token: T, repos: [acme]}]}":                                                  "git.forges[0].repos[0]: repository \"acme\": want owner/name",
		"secrets: [T]\ngit: {forges: [{host: github.com, token: T, repos: [a/../b]}]}":                                                "git.forges[0].repos[0]",
		"secrets: [T]\ngit: {forges: [{host: github.com, token: T, push: [{repo: a/b}]}]}":                                            "git.forges[0].push[0].branches: no branches",
		"secrets: [T]\ngit: {forges: [{host: github.com, token: T, push: [{repo: a/b, branches: ['a:b']}]}]}":                         "git.forges[0].push[0].branches[0]: branch pattern",
		"secrets: [T]\ngit: {forges: [{host: github.com, token: T, push: [{repo: a/b, branches: [x]}, {repo: A/B, branches: [y]}]}]}": "git.forges[0].push[1].repo: a/b is listed twice",
	} {
		_, err := loadString(t, yaml)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %v, want an error with %q", yaml, err, wantErr)
		}
	}
}
