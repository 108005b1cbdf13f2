package generator

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"text/template"

	"github.com/agentbox-dev/agentbox/catalog"
)

// AgentFilesDir holds the files of the agent catalog's Files, one tree per
// agent laid out as in the image; the agent Dockerfile copies the agent's
// tree onto the image's root.
const AgentFilesDir = OutDir + "/agent-files"

// agentFileView is what an agent file's template sees.
type agentFileView struct {
	Env       map[string]string // the agent's environment (the catalog's and env: in agentbox.yaml) by name
	Workspace string            // where the agent works
	// RequestMCP runs agentbox-request's MCP server: node and its script.
	RequestMCP []string
}

// RequestMCPScript is where the agent image holds agentbox-request's MCP
// server (RequestMCPFile), for agents that run on node.
const RequestMCPScript = "/usr/local/lib/agentbox/request-mcp.js"

// agentFileFuncs are the functions of an agent file's template.
var agentFileFuncs = template.FuncMap{
	"header": func() string { return Header },
	"toml":   tomlString,
	"json":   jsonString,
}

// AgentFiles renders agent's Files for the environment env and the
// workspace, by their path in the image.
func AgentFiles(agent catalog.Agent, env []catalog.EnvVar, workspace string) (map[string][]byte, error) {
	v := agentFileView{Env: map[string]string{}, Workspace: workspace, RequestMCP: []string{"node", RequestMCPScript}}
	for _, e := range env {
		v.Env[e.Name] = e.Value
	}
	out := map[string][]byte{}
	for _, f := range agent.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("agent %s: file %q: want a clean absolute path", agent.Name, f.Path)
		}
		t, err := template.New(f.Path).Option("missingkey=error").Funcs(agentFileFuncs).Parse(f.Body)
		if err != nil {
			return nil, fmt.Errorf("agent %s: file %s: %w", agent.Name, f.Path, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, v); err != nil {
			return nil, fmt.Errorf("rendering %s of agent %s: %w", f.Path, agent.Name, err)
		}
		out[f.Path] = b.Bytes()
	}
	return out, nil
}

// renderAgentFiles adds the agent's files to files, under AgentFilesDir.
func renderAgentFiles(files map[string][]byte, p *Plan) error {
	// One image serves every profile: its files see the default profile's
	// environment, with the base URLs of the keys its gateway holds.
	env, _ := withHeldKeys(p.Env, nil, p.Default().Keys)
	rendered, err := AgentFiles(p.Agent, env, p.Workspace)
	if err != nil {
		return err
	}
	for name, data := range rendered {
		files[AgentFilesDir+"/"+p.Agent.Name+name] = data
	}
	return nil
}

// tomlString encodes s as a TOML basic string: a JSON string is one, once
// DEL, which TOML refuses raw, is escaped too.
func tomlString(s string) string {
	return strings.ReplaceAll(jsonString(s), "\x7f", `\u007F`)
}
