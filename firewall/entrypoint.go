package firewall

import _ "embed"

// entrypoint is the static program installed at EntrypointPath. It reads
// RulesPath and DnsmasqPath; nothing in it depends on the policy.
//
//go:embed entrypoint.sh
var entrypoint string
