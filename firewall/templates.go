package firewall

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/agentbox-dev/agentbox/internal/shquote"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// templateFiles are the templates, parsed in this order.
var templateFiles = []string{
	"templates/rules.nft.tmpl",
	"templates/common.nft.tmpl", // included by rules.nft
	"templates/dnsmasq.conf.tmpl",
	"templates/dnsmasq-common.conf.tmpl", // read by dnsmasq.conf
	"templates/neverdns.pl.tmpl",         // rendered into entrypoint.sh
	"templates/requests.pl.tmpl",         // rendered into entrypoint.sh
	"templates/entrypoint.sh.tmpl",
	"templates/ulogd.conf.tmpl",
	"templates/haproxy.cfg.tmpl",
	"templates/haproxy-common.cfg.tmpl",
	"templates/git.lua.tmpl",
}

// funcs are the template functions: hermetic (no environment, clock or
// randomness) and few. Alignment, sorting and grouping are done in Go.
var funcs = template.FuncMap{
	"join": strings.Join,
	"shq":  shquote.Word,
	"bits": prefixBits,
}

var templates = template.Must(template.New("firewall").
	Option("missingkey=error").
	Funcs(funcs).
	ParseFS(templateFS, templateFiles...))

// execute renders the template named name (its file name) with view v.
func execute(name string, v any) ([]byte, error) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, v); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", name, err)
	}
	return b.Bytes(), nil
}
