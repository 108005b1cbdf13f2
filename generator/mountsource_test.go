package generator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mountProject makes a project directory with a real docs/adr, a real
// outside directory beside it, and the links named in links (path -> target).
func mountProject(t *testing.T, links map[string]string) (project, outside string) {
	t.Helper()
	base := t.TempDir()
	project = filepath.Join(base, "project")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(project, "docs", "adr"), filepath.Join(project, ".git", "hooks"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, target := range links {
		full := filepath.Join(project, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	return project, outside
}

func TestCheckMountSourcesAccepts(t *testing.T) {
	project, _ := mountProject(t, map[string]string{"unused-link": "/etc"})
	ok := []string{"docs", "docs/adr", ".git/hooks", "missing", "missing/deeper/still", "docs/adr/missing"}
	if err := CheckMountSources(project, ok); err != nil {
		t.Errorf("CheckMountSources(%q): %v", ok, err)
	}
	// The project directory itself may be reached through a link.
	link := filepath.Join(t.TempDir(), "via-link")
	if err := os.Symlink(project, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckMountSources(link, ok); err != nil {
		t.Errorf("project through a link: %v", err)
	}
	if err := CheckMountSources(project, nil); err != nil {
		t.Errorf("no paths: %v", err)
	}
}

func TestCheckMountSourcesRefuses(t *testing.T) {
	tests := []struct {
		name    string
		links   map[string]string
		path    string
		outside bool
		want    string
	}{
		{"absolute link", map[string]string{"etc": "/etc"}, "etc", true,
			`"etc" is a symbolic link to "/etc", which leads outside the project`},
		{"relative link up", map[string]string{"up": "../../.."}, "up", true,
			`"up" is a symbolic link to "../../..", which leads outside the project`},
		{"link to a sibling", map[string]string{"sib": "../outside"}, "sib", true, "outside the project"},
		{"through a parent", map[string]string{"notes": "/etc"}, "notes/adr", true,
			`"notes/adr" passes through the symbolic link "notes" (to "/etc"), which leads outside the project`},
		{"dangling, outside", map[string]string{"gone": "/nonexistent-agentbox-test/x"}, "gone", true, "outside the project"},
		{"dangling, outside, below", map[string]string{"gone": "../outside/new"}, "gone/deeper", true, "outside the project"},
		{"chain leaving", map[string]string{"a": "b", "b": "../outside"}, "a", true, "outside the project"},
		{"into .git", map[string]string{".git/hooks2": "../docs"}, ".git/hooks2", false, "is a symbolic link (to \"../docs\")"},
		{"inside", map[string]string{"adr": "docs/adr"}, "adr", false,
			`"adr" is a symbolic link (to "docs/adr"): agentbox mounts no path through a link`},
		{"inside, absolute", map[string]string{"adr": "PROJECT/docs/adr"}, "adr", false, "mounts no path through a link"},
		{"inside, dangling", map[string]string{"later": "docs/not-yet"}, "later", false, "mounts no path through a link"},
		{"loop", map[string]string{"loop": "loop"}, "loop", false, "mounts no path through a link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			links := map[string]string{}
			project, _ := mountProject(t, nil)
			for p, target := range tt.links {
				links[p] = strings.ReplaceAll(target, "PROJECT", project)
			}
			for p, target := range links {
				if err := os.Symlink(target, filepath.Join(project, p)); err != nil {
					t.Fatal(err)
				}
			}
			err := CheckMountSources(project, []string{"docs", tt.path, "docs/adr"})
			var errs MountSourceErrors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("err = %v, want one MountSourceError", err)
			}
			e := errs[0]
			if e.Path != tt.path || e.Outside != tt.outside || !strings.Contains(e.Error(), tt.want) {
				t.Errorf("got %+v\n%v\nwant path %q, outside %v, message with %q", e, e, tt.path, tt.outside, tt.want)
			}
		})
	}
}

func TestCheckMountSourcesBadPaths(t *testing.T) {
	project, _ := mountProject(t, nil)
	for _, p := range []string{"", ".", "..", "../x", "/etc", "a/../../b", "a//b", "a/./b"} {
		err := CheckMountSources(project, []string{p})
		var errs MountSourceErrors
		if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Err == nil {
			t.Errorf("CheckMountSources(%q) = %v, want a path error", p, err)
		}
	}
	if err := CheckMountSources(filepath.Join(project, "missing"), []string{"docs"}); err == nil {
		t.Error("a missing project directory passed")
	}
}
