package npm

import (
	"bufio"
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Auth is the credential npm's configuration holds for one registry.
type Auth struct {
	// Header is the Authorization header npm sends to the registry
	// ("Bearer TOKEN" or "Basic BASE64"), "" for none.
	Header string
	// NPMRC is an .npmrc that gives npm the same registry and credential,
	// its ${NAME} references already expanded (a build has not the
	// environment they name): registry=URL and the credential's lines.
	NPMRC string
}

// AuthFromConfig finds the credential npm would send to registry, reading
// the .npmrc files npm reads (dir/.npmrc, then the user's: $HOME/.npmrc or
// NPM_CONFIG_USERCONFIG), in npm's order: the project's file wins, and in
// each the last assignment. Like npm, it takes only credentials scoped to
// the registry ("//host/path/:_authToken=", ":_auth=", ":username=" with
// ":_password=" in base64), looking at the registry's path, then each
// parent path up to the host; never an unscoped one, which npm would send
// to whatever registry it used. The zero Auth means none.
func AuthFromConfig(registry, dir string, getenv func(string) string) Auth {
	u, err := url.Parse(registry)
	if err != nil || u.Host == "" {
		return Auth{}
	}
	vals := map[string]string{}
	files := npmrcFiles(dir, getenv)
	slices.Reverse(files) // the project's file wins
	for _, f := range files {
		for k, v := range npmrcValues(f, getenv) {
			if !strings.ContainsAny(k+v, "\r\n") { // a variable that would add lines to the build's .npmrc
				vals[k] = v
			}
		}
	}
	path := strings.TrimRight(u.Path, "/") + "/"
	for {
		nerf := "//" + u.Host + path
		if a, ok := authAt(nerf, vals); ok {
			reg := strings.TrimRight(registry, "/") + "/"
			a.NPMRC = "registry=" + reg + "\n" + a.NPMRC
			return a
		}
		if path == "/" {
			return Auth{}
		}
		path = path[:strings.LastIndexByte(strings.TrimSuffix(path, "/"), '/')+1]
	}
}

// authAt is the credential the values hold for the nerf-darted prefix.
func authAt(nerf string, vals map[string]string) (Auth, bool) {
	line := func(k string) string { return nerf + ":" + k + "=" + vals[nerf+":"+k] + "\n" }
	if t := vals[nerf+":_authToken"]; t != "" {
		return Auth{Header: "Bearer " + t, NPMRC: line("_authToken")}, true
	}
	if a := vals[nerf+":_auth"]; a != "" {
		return Auth{Header: "Basic " + a, NPMRC: line("_auth")}, true
	}
	user, pass := vals[nerf+":username"], vals[nerf+":_password"]
	if user != "" && pass != "" {
		p, err := base64.StdEncoding.DecodeString(pass)
		if err != nil {
			return Auth{}, false
		}
		basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + string(p)))
		return Auth{Header: "Basic " + basic, NPMRC: line("username") + line("_password")}, true
	}
	return Auth{}, false
}

// npmrcFiles are the .npmrc files npm reads, the project's first.
func npmrcFiles(dir string, getenv func(string) string) []string {
	files := []string{filepath.Join(dir, ".npmrc")}
	user := getenv("NPM_CONFIG_USERCONFIG")
	if user == "" {
		user = getenv("npm_config_userconfig")
	}
	if user == "" && getenv("HOME") != "" {
		user = filepath.Join(getenv("HOME"), ".npmrc")
	}
	if user != "" {
		files = append(files, user)
	}
	return files
}

// npmrcValues reads the top-level keys of an .npmrc, nil if it cannot be
// read. The syntax is npm's ini: "#" and ";" start comments (also after an
// unquoted value), spaces around "=" are ignored, values may be quoted, keys
// and values may name environment variables as ${NAME}; keys after a
// [section] are not top-level; the last assignment wins.
func npmrcValues(file string, getenv func(string) string) map[string]string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			break
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if i := strings.IndexAny(v, "#;"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		k = envRef.ReplaceAllStringFunc(strings.TrimSpace(k), func(m string) string { return getenv(m[2 : len(m)-1]) })
		v = envRef.ReplaceAllStringFunc(v, func(m string) string { return getenv(m[2 : len(m)-1]) })
		vals[k] = v
	}
	return vals
}
