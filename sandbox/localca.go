package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/atomicfile"
	"github.com/agentbox-dev/agentbox/internal/settings"
)

// WriteLocalCA leaves the certificates of the settings' ca_certificates in
// dir's generator.LocalCA, which the agent image copies, or removes it when
// the settings name none: their content, not a variable of the build's
// environment, keys the image's CA step, so that a build agentbox does not
// start (the Dev Containers CLI's, docker compose's) gets the same CA and
// finds the step built. The file is written only when its content changes.
// It refuses a link on the way: agentbox writes only inside the project.
// s are the settings the command loaded (settings.LoadUser), which its
// compose commands get too (EnvironWith).
func WriteLocalCA(dir string, s settings.Settings) error {
	pemData, err := s.CAPEM()
	if err != nil {
		return err
	}
	if err := atomicfile.RefuseLinks(dir, path.Dir(generator.LocalDir), generator.LocalDir, generator.LocalCA); err != nil {
		return err
	}
	local := filepath.Join(dir, filepath.FromSlash(generator.LocalDir))
	file := filepath.Join(dir, filepath.FromSlash(generator.LocalCA))
	if pemData == nil {
		if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	_, err = atomicfile.WriteFile(file, pemData, 0o644)
	return err
}

// WriteLocalProgram leaves the images' programs of files (the generated
// files, generator.LocalProgram) in dir, where each image copies its
// program from and checks it against the sums its Dockerfile pins: they
// are agentbox's, not committed, so a checkout has them only once an
// agentbox wrote them. Each file is written only when its content changes
// (a task's images are rebuilt when a file is newer). It refuses a link on
// the way, and removes nothing.
func WriteLocalProgram(dir string, files map[string][]byte) error {
	rels := []string{generator.OutDir, generator.EgressProgramDir, generator.AgentProgramDir}
	var program []string
	for p := range files {
		if generator.LocalProgram(p) {
			program = append(program, p)
		}
	}
	slices.Sort(program)
	if err := atomicfile.RefuseLinks(dir, append(rels, program...)...); err != nil {
		return err
	}
	for _, p := range program {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if _, err := atomicfile.WriteFile(full, files[p], generator.FileMode(p)); err != nil {
			return err
		}
	}
	return nil
}
