package settings

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// What builds get beyond build arguments: BuildKit secrets (compose's
// build.secrets), which a RUN step mounts as a file for its own duration,
// so that they are in no layer, no image history and no generated file.
// Docker compose reads each from a variable of its own environment, which
// agentbox sets for up, run and build; unset, the secret is absent.
const (
	// SecretNPMRC is an .npmrc with the registry in use and its
	// credential (npm.AuthFromConfig), for npm ci.
	SecretNPMRC     = "agentbox_npmrc"
	EnvBuildNPMRC   = "AGENTBOX_BUILD_NPMRC"
	SecretNPMRCPath = "/run/secrets/" + SecretNPMRC
	// SecretCA is the PEM of ca_certificates, for apt and npm during the
	// build; the agent image also keeps it in its trust store (certificates
	// are no secret: the secret mount only carries a file that is not in
	// the build context).
	SecretCA     = "agentbox_ca"
	EnvBuildCA   = "AGENTBOX_BUILD_CA"
	SecretCAPath = "/run/secrets/" + SecretCA
)

// Where builds fetch from reaches them as BuildKit secrets too, each read
// from the variable that names it (BuildEnv sets them from the settings):
// which archive or registry serves a pinned package changes nothing in the
// image, so it stays out of BuildKit's cache key (a build argument would be
// in it). A build with the settings (agentbox build) thus leaves the cache
// that a build without them finds: the Dev Containers CLI's, from an editor
// that has none of these variables.
const (
	SecretDebianArchive  = "agentbox_debian_archive"
	SecretDebianLayout   = "agentbox_debian_layout"
	SecretDebianSecurity = "agentbox_debian_security"
	SecretNPMRegistry    = "agentbox_npm_registry"
)

// SourceSecret is one of those secrets and the variable it is read from.
type SourceSecret struct{ ID, Env string }

// DebianSecrets are the secrets of the Debian archive, in the order the
// compose file lists them.
var DebianSecrets = []SourceSecret{
	{SecretDebianArchive, EnvDebianArchive},
	{SecretDebianLayout, EnvDebianLayout},
	{SecretDebianSecurity, EnvDebianSecurity},
}

// NPMSecret is the secret of the npm registry.
var NPMSecret = SourceSecret{SecretNPMRegistry, EnvNPMRegistry}

// SecretPath is where a RUN step that mounts the secret id reads it.
func SecretPath(id string) string { return "/run/secrets/" + id }

// CAPEM reads ca_certificates: every file must hold one or more PEM
// certificates and nothing else. nil without any. Settings from LoadUser
// give what was read then.
func (s Settings) CAPEM() ([]byte, error) {
	if s.caRead {
		return s.caPEM, nil
	}
	var out bytes.Buffer
	for i, path := range s.CACertificates {
		key := fmt.Sprintf("ca_certificates[%d]", i)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", s.source(key), key, err)
		}
		n := 0
		for rest := data; ; {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				if len(bytes.TrimSpace(rest)) > 0 || n == 0 {
					return nil, fmt.Errorf("%s: %s: %s holds something other than PEM certificates", s.source(key), key, path)
				}
				break
			}
			if b.Type != "CERTIFICATE" {
				return nil, fmt.Errorf("%s: %s: %s holds a PEM %q block, not a certificate", s.source(key), key, path, b.Type)
			}
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				return nil, fmt.Errorf("%s: %s: %s: %w", s.source(key), key, path, err)
			}
			if err := pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}); err != nil {
				return nil, err
			}
			n++
		}
	}
	if out.Len() == 0 {
		return nil, nil
	}
	return out.Bytes(), nil
}

// Transport is http.DefaultTransport (proxies from the environment
// included) trusting ca_certificates beside the system's roots: bump's
// clients of the npm registry, Debian's archive and image registries.
func (s Settings) Transport() (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	pemData, err := s.CAPEM()
	if err != nil || pemData == nil {
		return t, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, errors.New("agentbox settings: ca_certificates: no certificate to add")
	}
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// BuildSecrets adds to environ what builds need of the secrets and the
// CA: EnvBuildNPMRC (npmrc, "" for none) and EnvBuildCA. The
// caller's own values of those variables are dropped.
func (s Settings) BuildSecrets(environ []string, npmrc string) ([]string, error) {
	pemData, err := s.CAPEM()
	if err != nil {
		return nil, err
	}
	vars := map[string]string{EnvBuildNPMRC: npmrc, EnvBuildCA: string(pemData)}
	return setVars(environ, vars), nil
}
