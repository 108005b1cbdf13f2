package review

import (
	"fmt"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"golang.org/x/net/publicsuffix"
)

// warnSuffix is the word on a destination that is a public suffix.
const warnSuffix = "a public suffix: anyone can register a name below it and publish there, and the entry admits them all"

// IsPublicSuffix reports whether a destination name (without "*.") is a
// public suffix of the Public Suffix List (golang.org/x/net/publicsuffix):
// a name below which anyone can register their own, as below co.uk,
// github.io or s3.amazonaws.com. A single label the list does not name
// (internal, localhost) is not one: the list's default rule is no promise
// that anyone can publish there.
func IsPublicSuffix(name string) bool {
	ps, icann := publicsuffix.PublicSuffix(name)
	return ps == name && (icann || strings.Contains(name, "."))
}

// markSuffixes adds the public-suffix warning to each row that admits a
// destination that is one.
func markSuffixes(rows []DiffRow) []DiffRow {
	for i, r := range rows {
		if r.To == "" || r.Warning != "" || (r.What != "destination" && r.What != "profile destination") {
			continue
		}
		last := r.Subject[strings.LastIndex(r.Subject, " ")+1:]
		if name, _, ok := strings.Cut(last, ":"); ok && IsPublicSuffix(name) {
			rows[i].Warning = warnSuffix
		}
	}
	return rows
}

// PublicSuffixWarnings are validate's warnings: each entry of
// network.domains, and of a custom profile's own, that names a public
// suffix, as "agentbox.yaml:LINE:COL: KEY: NAME is a public suffix: ...".
// The catalog's entries (agent, services, IDE) are agentbox's, not the
// file's: explain and diff name them.
func PublicSuffixWarnings(c *generator.Compiled) []string {
	var out []string
	check := func(key string, domains []config.DomainRule) {
		for i, d := range domains {
			if IsPublicSuffix(d.Name) {
				path := fmt.Sprintf("%s[%d]", key, i)
				e := &yamlpos.Error{Pos: c.Positions()[path], Path: path, Msg: d.Name + " is " + warnSuffix}
				out = append(out, e.Format(config.ConfigFile))
			}
		}
	}
	check("network.domains", c.Config.Domains)
	for _, p := range c.Config.Profiles {
		if p.Custom {
			check(yamlpos.Join("profiles", p.Name)+".network.domains", p.Network.Domains)
		}
	}
	return out
}
