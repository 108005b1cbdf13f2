package generator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
)

// TestAgentFilesJSON: every catalog file renders, and a JSON one is JSON
// once its comment lines (a header) are removed, as the CLIs that read them
// do; the workspace given is the one rendered.
func TestAgentFilesJSON(t *testing.T) {
	const workspace = `/srv/my "work"`
	for _, a := range catalog.Agents() {
		files, err := AgentFiles(a, nil, workspace)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != len(a.Files) {
			t.Errorf("%s: %d files rendered of %d", a.Name, len(files), len(a.Files))
		}
		for p, body := range files {
			// The header: a comment line for a CLI that strips comments
			// (Gemini CLI), the value of a "//" key for one that does not
			// (Claude Code).
			var keyed struct {
				Header string `json:"//"`
			}
			_ = json.Unmarshal(body, &keyed)
			if !strings.HasPrefix(string(body), "// "+Header+"\n") && keyed.Header != Header && strings.HasSuffix(p, ".json") {
				t.Errorf("%s: %s carries the header neither as a first comment line nor as the \"//\" key", a.Name, p)
			}
			if !strings.HasSuffix(p, ".json") {
				continue
			}
			var lines []string
			for _, l := range strings.Split(string(body), "\n") {
				if !strings.HasPrefix(strings.TrimSpace(l), "//") {
					lines = append(lines, l)
				}
			}
			var v any
			if err := json.Unmarshal([]byte(strings.Join(lines, "\n")), &v); err != nil {
				t.Errorf("%s: %s is not JSON: %v\n%s", a.Name, p, err, body)
			}
		}
	}
	gemini, _ := catalog.LookupAgent("gemini")
	files, _ := AgentFiles(gemini, nil, workspace)
	if got := string(files["/etc/gemini-cli/trustedFolders.json"]); !strings.Contains(got, `"/srv/my \"work\"": "TRUST_FOLDER"`) {
		t.Errorf("gemini's trusted folders do not trust the workspace:\n%s", got)
	}
	bad := catalog.Agent{Name: "x", Files: []catalog.File{{Path: "etc/x", Body: ""}}}
	if _, err := AgentFiles(bad, nil, workspace); err == nil {
		t.Error("a relative path was accepted")
	}
}
