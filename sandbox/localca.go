package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"

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
