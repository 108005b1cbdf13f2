package checks

import (
	"context"
	"fmt"
	"io"
	"sync"

	interp "github.com/compose-spec/compose-go/v2/interpolation"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sirupsen/logrus"
)

// composeFilename names the compose file in compose-go's messages. The
// content is passed in memory, so the name is never opened.
const composeFilename = "docker-compose.yml"

var silenceLogrus sync.Once

// Compose validates a rendered compose file with compose-go's loader: YAML
// syntax, the compose JSON schema (unknown keys and wrong types fail), and
// the loader's consistency checks (undefined services in depends_on or
// network_mode, undefined volumes and networks, healthcheck form, ...).
//
// projectDir is the directory the compose file lives in and projectName the
// explicit project name (it must already be a valid compose project name).
// The check is hermetic:
//
//   - Nothing on disk is required: the loader never checks that build
//     contexts or bind-mount sources exist (the compose CLI does that at build
//     and run time), and env_file/label_file resolution is skipped
//     (SkipResolveEnvironment, SkipResolveLabels), as those files may exist
//     only on the user's machine. Paths are not resolved (ResolvePaths=false):
//     resolution only rewrites strings, but it expands "~" from $HOME and
//     follows symlinks on this machine.
//   - Every service is checked, including those behind a profile
//     (Profiles = ["*"]).
//   - Nothing comes from the environment: every variable reference ($VAR,
//     ${VAR}, ${VAR:-default}, ${VAR:?err}, ...) is an error, because
//     `docker compose` would substitute it from the user's shell at run time,
//     so the generated file would not mean one thing. "$$" is the escape for
//     a literal "$" and passes (compose turns it into "$"). A service
//     environment entry without a value (`FOO:`), which compose passes through
//     from the host, is not interpolation and passes.
//
// compose-go reports no line numbers (YAML syntax errors aside): errors
// name the key path instead, e.g. "services.agent.pids_limit".
//
// compose-go logs warnings through logrus's standard logger; the first call
// sets that logger's output to io.Discard (and changes nothing else).
func Compose(data []byte, projectDir, projectName string) error {
	_, err := loadCompose(data, projectDir, projectName)
	return err
}

func loadCompose(data []byte, projectDir, projectName string) (*types.Project, error) {
	silenceLogrus.Do(func() { logrus.SetOutput(io.Discard) })
	details := types.ConfigDetails{
		WorkingDir:  projectDir,
		ConfigFiles: []types.ConfigFile{{Filename: composeFilename, Content: data}},
		Environment: types.Mapping{},
	}
	project, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName(projectName, true)
		o.Profiles = []string{"*"} // check services behind profiles too
		o.ResolvePaths = false
		o.SkipResolveEnvironment = true
		o.SkipResolveLabels = true
		o.Interpolate.Substitute = rejectVariables
		// No casts: a value interpolation would turn into a number or a
		// boolean is one a variable wrote, and every variable is refused
		// above; the casts' path matching was a sixth of generate's time.
		o.Interpolate.TypeCastMapping = map[tree.Path]interp.Cast{}
	})
	if err != nil {
		return nil, fmt.Errorf("compose: %w", err)
	}
	return project, nil
}

// rejectVariables is the loader's substitution function: it unescapes "$$"
// like compose does and fails on any variable reference.
func rejectVariables(value string, _ template.Mapping) (string, error) {
	var names []string
	record := func(name string) (string, bool) {
		names = append(names, name)
		return "", true
	}
	out, err := template.SubstituteWithOptions(value, record, template.WithoutLogging)
	if err != nil {
		return "", err
	}
	if len(names) > 0 {
		return "", fmt.Errorf("%q refers to variable %s, which docker compose would take from the environment (write $$ for a literal $)", value, names[0])
	}
	return out, nil
}
