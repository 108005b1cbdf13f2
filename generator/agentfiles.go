package generator

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"text/template"

	"github.com/agentbox-dev/agentbox/catalog"
)

// AgentFilesDir holds the files of the agent's catalog entry (its settings),
// each under its path in the image: the agent Dockerfile copies the tree to
// the image's root, where root owns it.
const AgentFilesDir = OutDir + "/agent-files"

// agentFileFacts are what a catalog file's body sees.
type agentFileFacts struct {
	Workspace string // where the agent works
	Home      string // the agent user's home
}

// RenderAgentFiles renders agent's files for a sandbox whose workspace is
// workspace, keyed by their path in the image.
func RenderAgentFiles(agent catalog.Agent, workspace string) (map[string][]byte, error) {
	facts := agentFileFacts{Workspace: workspace, Home: catalog.Home}
	out := map[string][]byte{}
	for _, f := range agent.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("agent %s: file path %q is not absolute and clean", agent.Name, f.Path)
		}
		t, err := template.New(f.Path).Option("missingkey=error").Funcs(funcs).Parse(f.Body)
		if err != nil {
			return nil, fmt.Errorf("agent %s: parsing %s: %w", agent.Name, f.Path, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, facts); err != nil {
			return nil, fmt.Errorf("agent %s: rendering %s: %w", agent.Name, f.Path, err)
		}
		out[f.Path] = b.Bytes()
	}
	return out, nil
}

// renderAgentFiles adds the agent's files under AgentFilesDir.
func renderAgentFiles(files map[string][]byte, p *Plan) error {
	rendered, err := RenderAgentFiles(p.Agent, p.Workspace)
	if err != nil {
		return err
	}
	for imagePath, body := range rendered {
		files[agentFilesRoot(p.Agent)+imagePath] = body
	}
	return nil
}

// agentFilesRoot is the directory the Dockerfile copies to the image's root.
func agentFilesRoot(a catalog.Agent) string {
	return AgentFilesDir + "/" + a.Name
}

// agentFilesCopy is the source of the Dockerfile's COPY, relative to OutDir;
// "" when the agent has no files.
func agentFilesCopy(a catalog.Agent) string {
	if len(a.Files) == 0 {
		return ""
	}
	return strings.TrimPrefix(agentFilesRoot(a), OutDir+"/") + "/"
}
