package generator

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/agentbox-dev/agentbox/firewall"
)

// The programs of the images: agentbox's, the same for every project of
// one agentbox version, not the project's. They are not committed (each
// directory's generated .gitignore keeps all but itself out of git) and
// Diff does not compare them: generate, build, up and run write them
// (WriteLocalProgram in sandbox), and each image's build takes its program
// only with the SHA-256 sums that its committed Dockerfile pins. Not in
// LocalDir, which the agent image copies whole: a new program would
// rebuild it from its CA step on.
const (
	// EgressProgramDir holds the egress program (firewall.Program): the
	// entrypoint, the counters, sets and chains of every rules.nft, the
	// settings of every dnsmasq.conf, the judge of the gateway's git front
	// doors (which HAProxy loads where a profile has a forge), ulogd's
	// configuration. The profiles' directories hold what their policies
	// decide.
	EgressProgramDir    = OutDir + "/" + egressProgramName
	EgressProgramIgnore = EgressProgramDir + "/.gitignore"
	egressProgramName   = "egress-program"
	// AgentProgramDir holds the agent image's program: agentbox-request
	// and its MCP server.
	AgentProgramDir    = OutDir + "/" + agentProgramName
	AgentProgramIgnore = AgentProgramDir + "/.gitignore"
	agentProgramName   = "agent-program"
)

// LocalProgram says whether generated file path is a program's, which is
// not committed (EgressProgramDir, AgentProgramDir).
func LocalProgram(path string) bool {
	for _, dir := range []string{EgressProgramDir, AgentProgramDir} {
		if strings.HasPrefix(path, dir+"/") && path != dir+"/.gitignore" {
			return true
		}
	}
	return false
}

// ProgramStep is what a Dockerfile's step that takes a program from the
// build context sees (templates/program.tmpl).
type ProgramStep struct {
	Name  string // the directory in the build context (OutDir)
	Dir   string // the same, from the project
	Files []ProgramFile
}

// ProgramFile is a file of a program: its SHA-256, and where and with
// which mode the image installs it.
type ProgramFile struct {
	Name, Sum, Path, Mode string
}

// programIgnore is the .gitignore of a program's directory.
func programIgnore(what string) []byte {
	return []byte("# " + Header + "\n# " + what + ", agentbox's (agentbox generate, build, up and run write\n# it): not committed; the image's Dockerfile pins its sums.\n*\n!.gitignore\n")
}

// renderPrograms adds the images' programs to files, with their
// .gitignore files, and sets the views' steps that take them. The agent's
// program is rendered with v.
func renderPrograms(files map[string][]byte, v *view) error {
	egress, err := firewall.Program()
	if err != nil {
		return err
	}
	files[EgressProgramIgnore] = programIgnore("The egress program")
	v.EgressProgram = programStep(files, egressProgramName, egress, firewall.ProgramPath)
	agent := map[string][]byte{}
	if err := execute(agent, "agentbox-request.sh", "agentbox-request.sh.tmpl", *v); err != nil {
		return err
	}
	if v.Agent.Package != "" {
		if err := execute(agent, "agentbox-request-mcp.js", "agentbox-request-mcp.js.tmpl", *v); err != nil {
			return err
		}
	}
	files[AgentProgramIgnore] = programIgnore("The agent image's program")
	paths := map[string]string{"agentbox-request.sh": v.RequestCommand, "agentbox-request-mcp.js": v.RequestMCP}
	v.AgentProgram = programStep(files, agentProgramName, agent, func(name string) string { return paths[name] })
	return nil
}

// programStep adds program, files by name, to files under OutDir/name and
// returns the step that installs each at path(its name).
func programStep(files map[string][]byte, name string, program map[string][]byte, path func(string) string) ProgramStep {
	s := ProgramStep{Name: name, Dir: OutDir + "/" + name}
	for _, f := range sortedPaths(program) {
		files[s.Dir+"/"+f] = program[f]
		mode := "0644"
		if FileMode(f) == 0o755 {
			mode = "0755"
		}
		s.Files = append(s.Files, ProgramFile{Name: f, Sum: fmt.Sprintf("%x", sha256.Sum256(program[f])), Path: path(f), Mode: mode})
	}
	return s
}
