package firewall

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// requireTool returns the path of an external tool a test runs. When the
// tool is missing, or the test needs root and does not have it, the test is
// skipped with a message saying why; under CI=true it fails instead
// (testenv.Unavailable), because CI must run every check.
func requireTool(t *testing.T, name string, needRoot bool) string {
	t.Helper()
	if needRoot && os.Geteuid() != 0 {
		testenv.Unavailable(t, "running "+name+" needs root (CAP_NET_ADMIN)")
	}
	if path, err := exec.LookPath(name); err == nil {
		return path
	}
	// /usr/sbin is often missing from a normal user's PATH.
	if path := filepath.Join("/usr/sbin", name); isExecutable(path) {
		return path
	}
	testenv.Unavailable(t, name+" is not installed (Debian package "+debianPackage[name]+")")
	return ""
}

// debianPackage names the package that provides each tool.
var debianPackage = map[string]string{
	"bash":    "bash",
	"dnsmasq": "dnsmasq-base",
	"haproxy": "haproxy",
	"nft":     "nftables",
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
