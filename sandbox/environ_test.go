package sandbox

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestComposeEnv(t *testing.T) {
	ipnet := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return n
	}
	addrs := func() ([]net.Addr, error) {
		return []net.Addr{ipnet("127.0.0.1/8"), ipnet("198.18.201.1/24"), ipnet("172.17.0.1/16"), ipnet("::1/128"),
			ipnet("fe80::1/64"), ipnet("2001:2::201/64"), &net.IPAddr{IP: net.ParseIP("198.18.9.9")}}, nil
	}
	got := ComposeEnv([]string{"PATH=/bin"}, addrs)
	if want := []string{"PATH=/bin", "AGENTBOX_HOST_ADDRS=198.18.201.1 172.17.0.1 2001:2::201"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// The caller's own value stays, even empty.
	if got := ComposeEnv([]string{"AGENTBOX_HOST_ADDRS="}, addrs); !slices.Equal(got, []string{"AGENTBOX_HOST_ADDRS="}) {
		t.Errorf("got %q", got)
	}
	if got := ComposeEnv(nil, func() ([]net.Addr, error) { return nil, errors.New("no") }); !slices.Equal(got, []string{"AGENTBOX_HOST_ADDRS="}) {
		t.Errorf("got %q", got)
	}
}

// The commands that build take the user's settings file; the others do not
// read it, so a bad one cannot keep the sandbox from stopping.
func TestComposeEnvironSettings(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("AGENTBOX_DEBIAN_ARCHIVE", "")
	t.Setenv("NPM_CONFIG_REGISTRY", "")
	if err := os.MkdirAll(filepath.Join(cfg, "agentbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cfg, "agentbox", "settings.yaml")
	if err := os.WriteFile(file, []byte("debian:\n  archive: http://10.9.9.9:3142/snap\nnpm:\n  registry: http://10.9.9.9:4873/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		command string
		want    bool
	}{{"up", true}, {"build", true}, {"down", false}, {"exec", false}} {
		env, err := Environ(c.command)
		if err != nil {
			t.Fatalf("%s: %v", c.command, err)
		}
		got := slices.Contains(env, "AGENTBOX_DEBIAN_ARCHIVE=http://10.9.9.9:3142/snap") &&
			slices.Contains(env, "NPM_CONFIG_REGISTRY=http://10.9.9.9:4873/")
		if got != c.want {
			t.Errorf("compose %s: settings in its environment %v, want %v", c.command, got, c.want)
		}
	}
	if err := os.WriteFile(file, []byte("debian:\n  archive: nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Environ("build"); err == nil || !strings.Contains(err.Error(), "settings.yaml:2:12: debian.archive") {
		t.Errorf("bad settings: %v", err)
	}
	if _, err := Environ("down"); err != nil {
		t.Errorf("down read the bad settings file: %v", err)
	}
}
