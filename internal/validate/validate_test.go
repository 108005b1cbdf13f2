package validate

import (
	"strings"
	"testing"

	_ "github.com/agentbox-dev/agentbox/internal/testing/golden"
)

func TestDomain(t *testing.T) {
	good := map[string]string{
		"example.com":      "example.com",
		"*.Example.COM.":   "example.com",
		"xn--bcher-kva.ch": "xn--bcher-kva.ch",
		"a-b.c1.io":        "a-b.c1.io",
		"1password.com":    "1password.com",
	}
	for in, want := range good {
		if got, _, err := Domain(in); err != nil || got != want {
			t.Errorf("Domain(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                               "empty",
		"com":                            "two labels",
		"*.com":                          "two labels",
		"a.*.com":                        "wildcard",
		"10.0.0.1":                       "IP address",
		"a..com":                         "empty label",
		"-a.com":                         "start and end",
		"a_b.com":                        "'_'",
		"bücher.de":                      "punycode",
		"\u212Aubernetes.io":             "U+212A", // KELVIN SIGN: strings.ToLower makes it k
		"\u212A8s.io":                    "U+212A",
		"example.\u212Aube":              "U+212A",
		"*.\u212Aubernetes.io":           "U+212A",
		"exa\u017Fple.com":               "U+017F", // LATIN SMALL LETTER LONG S: folds to s
		"\u0130stanbul.com":              "U+0130", // LATIN CAPITAL LETTER I WITH DOT ABOVE
		"\uFF45xample.com":               "U+FF45", // FULLWIDTH LATIN SMALL LETTER E
		strings.Repeat("a", 64) + ".x":   "longer than 63",
		strings.Repeat("a.", 127) + "co": "longer than 253",
	}
	for in, want := range bad {
		if _, _, err := Domain(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Domain(%q) error = %v, want it to contain %q", in, err, want)
		}
	}
}

func TestCIDR(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.0/8": "10.0.0.0/8", "198.18.0.1": "198.18.0.1/32", "2001:2::/48": "2001:2::/48", "::1": "::1/128"} {
		if p, err := CIDR(in); err != nil || p.String() != want {
			t.Errorf("CIDR(%q) = %v, %v", in, p, err)
		}
	}
	for in, want := range map[string]string{"10.0.0.1/8": `did you mean "10.0.0.0/8"`, "0.0.0.0/0": "every address", "::/0": "every address", "fe80::1%eth0": "invalid", "::ffff:1.2.3.4": "IPv4-mapped", "x": "invalid"} {
		if _, err := CIDR(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CIDR(%q) error = %v, want %q", in, err, want)
		}
	}
}

func TestMemory(t *testing.T) {
	for in, want := range map[string]string{"4g": "4g", "512M": "512m", "6mb": "6m", "1048576k": "1048576k"} {
		if got, err := Memory(in); err != nil || got != want {
			t.Errorf("Memory(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"4", "5m", "4 g", "-1g", "1t", "99999999999999999999g",
		"8192\u212A", "8192\u212Ab", "\uFF18g", "8\uFF47"} {
		if _, err := Memory(in); err == nil {
			t.Errorf("Memory(%+q) accepted", in)
		}
	}
	// A look-alike is shown escaped, so that the message does not read "8192K".
	if _, err := Memory("8192\u212A"); err == nil || !strings.Contains(err.Error(), `"8192\u212a"`) {
		t.Errorf("Memory(8192 KELVIN SIGN) error = %v, want the value escaped", err)
	}
}

func TestPathsAndNames(t *testing.T) {
	for _, s := range []string{"/workspace", "/src/my-project", "/home/dev"} {
		if err := ContainerPath(s); err != nil {
			t.Errorf("ContainerPath(%q): %v", s, err)
		}
	}
	for _, s := range []string{"workspace", "/", "/etc", "/usr/src", "/a/../b", "/a b", "/home/agent", "/a/$(id)"} {
		if ContainerPath(s) == nil {
			t.Errorf("ContainerPath(%q) accepted", s)
		}
	}
	// A task's compose project is NAME-task-TASK: no sandbox may be named so.
	for s, ok := range map[string]bool{"x-task-y": false, "x-task": false, "x-task-": false, "-task": false, "a-task-task-b": false,
		"x-tasks": true, "x_task_y": true, "task-x": true, "x-tas-k": true, "xtask-y": true, "x-taskx": true} {
		if err := ProjectName(s); (err == nil) != ok {
			t.Errorf("ProjectName(%q): %v", s, err)
		}
	}
	for _, s := range []string{"docs", "docs/adr", ".env", "a/b.c"} {
		if err := RelPath(s); err != nil {
			t.Errorf("RelPath(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", ".", "..", "../x", "/etc", "a//b", "a/./b", "a;b"} {
		if RelPath(s) == nil {
			t.Errorf("RelPath(%q) accepted", s)
		}
	}
	for in, want := range map[string]string{"My Project!": "my-project", "___": "agentbox", "ÄBC": "bc", "\u212Aelvin": "elvin", "\u0130x": "x", strings.Repeat("x", 80): strings.Repeat("x", 63),
		"fix-task-tool": "fix_task-tool", "a-task-task-b": "a_task_task-b", "my task": "my_task", "task-force": "task-force", "multitask": "multitask"} {
		if got := SanitizeProjectName(in); got != want || ProjectName(got) != nil {
			t.Errorf("SanitizeProjectName(%q) = %q, want %q", in, got, want)
		}
	}
	for _, s := range []string{"git", "g++", "libc6-dev", "jq=1.6-2.1+deb12u1", "python3.11"} {
		if err := DebianPackage(s); err != nil {
			t.Errorf("DebianPackage(%q): %v", s, err)
		}
	}
	for _, s := range []string{"g", "Git", "git;id", "jq=", "jq=$(id)", "-rf"} {
		if DebianPackage(s) == nil {
			t.Errorf("DebianPackage(%q) accepted", s)
		}
	}
}

// TestPathLengths: paths and patterns stay within Linux's PATH_MAX (4095
// bytes without the NUL) and NAME_MAX (255).
func TestPathLengths(t *testing.T) {
	name := strings.Repeat("a", 255)
	long := strings.Repeat(name+"/", 15) + strings.Repeat("b", 4095-15*256) // 4095 bytes
	if len(long) != 4095 {
		t.Fatalf("len %d", len(long))
	}
	for _, check := range []struct {
		name string
		f    func(string) error
		pre  string
	}{{"RelPath", RelPath, ""}, {"PathPattern", PathPattern, ""}, {"ContainerPath", ContainerPath, "/"}} {
		for s, want := range map[string]string{
			name:                         "",
			name + "a":                   "a name is longer than 255 bytes",
			long[len(check.pre):]:        "",
			long[len(check.pre):] + "/b": "longer than 4095 bytes",
		} {
			err := check.f(check.pre + s)
			if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Errorf("%s(%d bytes) = %v, want %q", check.name, len(check.pre+s), err, want)
			}
		}
	}
}
