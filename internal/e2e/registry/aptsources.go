package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// mirrors are the Debian mirrors apt is configured with, and the files
// that name them.
type mirrors struct {
	main, mainFrom         string
	security, securityFrom string
}

// aptSource is one source entry: a deb line, or a deb822 stanza.
type aptSource struct {
	uris, suites []string
}

// aptMirrors reads dir/sources.list and dir/sources.list.d/*.list and
// *.sources (in name order). The first http(s) source whose suites include
// one ending in -security is the security mirror; the first other one, the
// main mirror.
func aptMirrors(dir string) (mirrors, error) {
	files := []string{filepath.Join(dir, "sources.list")}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, err := filepath.Glob(filepath.Join(dir, "sources.list.d", pat))
		if err != nil {
			return mirrors{}, err
		}
		files = append(files, m...)
	}
	slices.Sort(files[1:])
	var m mirrors
	for _, f := range files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			return mirrors{}, err
		}
		parse := parseOneLine
		if strings.HasSuffix(f, ".sources") {
			parse = parseDeb822
		}
		for _, s := range parse(string(b)) {
			m.add(s, f)
		}
	}
	return m, nil
}

func (m *mirrors) add(s aptSource, file string) {
	var uri string
	for _, u := range s.uris {
		if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			uri = u
			break
		}
	}
	if uri == "" {
		return
	}
	security := slices.ContainsFunc(s.suites, func(s string) bool { return strings.HasSuffix(s, "-security") })
	switch {
	case security && m.security == "":
		m.security, m.securityFrom = uri, file
	case !security && m.main == "":
		m.main, m.mainFrom = uri, file
	}
}

// parseOneLine reads one-line sources: "deb [OPTIONS] URI SUITE [COMPONENT...]".
func parseOneLine(text string) []aptSource {
	var out []aptSource
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 || (f[0] != "deb" && f[0] != "deb-src") {
			continue
		}
		f = f[1:]
		if len(f) > 0 && strings.HasPrefix(f[0], "[") {
			i := slices.IndexFunc(f, func(s string) bool { return strings.HasSuffix(s, "]") })
			if i < 0 {
				continue
			}
			f = f[i+1:]
		}
		if len(f) < 2 {
			continue
		}
		out = append(out, aptSource{uris: f[:1], suites: f[1:2]})
	}
	return out
}

// parseDeb822 reads deb822 sources: stanzas of "Field: value" lines
// (continued on lines that start with a space) separated by blank lines;
// stanzas with "Enabled: no" or without a deb type are skipped.
func parseDeb822(text string) []aptSource {
	var out []aptSource
	fields := map[string]string{}
	last := ""
	flush := func() {
		types := strings.Fields(fields["types"])
		if len(fields) > 0 && strings.ToLower(fields["enabled"]) != "no" && (slices.Contains(types, "deb") || slices.Contains(types, "deb-src")) {
			out = append(out, aptSource{uris: strings.Fields(fields["uris"]), suites: strings.Fields(fields["suites"])})
		}
		fields, last = map[string]string{}, ""
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if ok {
				last = strings.ToLower(strings.TrimSpace(k))
				fields[last] = strings.TrimSpace(v)
			}
		}
	}
	flush()
	return out
}
