package generator

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// TestEgressProgramPinned runs the egress Dockerfile's step that takes the
// egress program from the build context (.agentbox/egress-program, not
// committed but for its .gitignore) in bash, with its paths moved into a temporary directory:
// the program as rendered is installed; a missing one and one that is not
// what the Dockerfile pins (a byte changed, a file missing) stop the build
// with the reason, and install nothing.
func TestEgressProgramPinned(t *testing.T) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("sha256sum is not installed")
	}
	cfg, err := loadString(t, "agent: claude\n")
	if err != nil {
		t.Fatal(err)
	}
	errs := &yamlpos.Errors{File: config.ConfigFile}
	files, err := render(plan(cfg, fakeLock(cfg), errs))
	if err != nil || errs.Err() != nil {
		t.Fatal(err, errs.Err())
	}
	docker := string(files[EgressDockerfile])
	_, step, ok := strings.Cut(docker, "COPY "+egressProgramName+"/ /tmp/agentbox-program/\nRUN ")
	step, _, ok2 := strings.Cut(step, "\n\n")
	if !ok || !ok2 {
		t.Fatalf("the egress Dockerfile has no step that takes the egress program:\n%s", docker)
	}
	step = strings.ReplaceAll(step, "\\\n", "\n")
	for name, tamper := range map[string]func(dir string){
		"as rendered": func(string) {},
		"missing": func(dir string) { // a fresh clone: only the .gitignore
			for _, name := range firewall.ProgramFiles {
				os.Remove(filepath.Join(dir, name))
			}
		},
		"changed": func(dir string) {
			f := filepath.Join(dir, "entrypoint.sh")
			data, _ := os.ReadFile(f)
			os.WriteFile(f, append(data, '\n'), 0o755)
		},
		"a file missing": func(dir string) { os.Remove(filepath.Join(dir, "ulogd.conf")) },
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			program := filepath.Join(root, egressProgramName)
			if err := os.MkdirAll(program, 0o755); err != nil {
				t.Fatal(err)
			}
			for p, data := range files {
				if strings.HasPrefix(p, EgressProgramDir+"/") { // the .gitignore too, as in a checkout
					if err := os.WriteFile(filepath.Join(program, filepath.Base(p)), data, FileMode(p)); err != nil {
						t.Fatal(err)
					}
				}
			}
			tamper(program)
			script := strings.NewReplacer("/tmp/agentbox-program", program,
				firewall.EntrypointPath, filepath.Join(root, "bin/agentbox-egress"),
				firewall.UlogdPath, filepath.Join(root, "etc/ulogd.conf"), firewall.CommonPath, filepath.Join(root, "etc/common.nft")).Replace(step)
			if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("bash", "-c", script).CombinedOutput()
			_, statErr := os.Stat(filepath.Join(root, "bin/agentbox-egress"))
			switch {
			case name == "as rendered" && (err != nil || statErr != nil):
				t.Errorf("the step failed or installed nothing: %v, %v\n%s", err, statErr, out)
			case name == "missing" && (err == nil || !strings.Contains(string(out), "egress-program is missing")):
				t.Errorf("without the program: %v\n%s", err, out)
			case (name == "changed" || name == "a file missing") && (err == nil || !strings.Contains(string(out), "is not the program this file pins")):
				t.Errorf("with another program: %v\n%s", err, out)
			case name != "as rendered" && statErr == nil:
				t.Errorf("the step installed a program it refused")
			}
		})
	}
}
