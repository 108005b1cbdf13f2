package generator

import (
	"slices"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
)

// docker compose copies ~/.docker/config.json's proxies into every
// container: the agent's environment blanks those agentbox.yaml does not
// set itself.
func TestProxyBlank(t *testing.T) {
	p := &Plan{Env: []catalog.EnvVar{{Name: "HTTPS_PROXY", Value: "http://10.1.2.3:3128"}}, Secrets: []string{"no_proxy"}}
	got := proxyBlank(p)
	want := []string{"ALL_PROXY", "FTP_PROXY", "HTTP_PROXY", "NO_PROXY", "all_proxy", "ftp_proxy", "https_proxy", "http_proxy"}
	if !slices.Equal(got, want) {
		t.Errorf("proxyBlank: %q, want %q", got, want)
	}
}
