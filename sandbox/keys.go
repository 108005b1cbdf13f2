package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbox-dev/agentbox/firewall"
)

// Input runs args (the program first) in the egress container with stdin
// on its standard input (docker exec -i, docker compose exec -T) and
// returns its stdout; its error is the first line of its stderr.
func (e Egress) Input(ctx context.Context, stdin string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	err := e.runner().Run(ctx, Cmd{Args: append(append([]string{}, e.exec...), args...),
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return "", errors.New(FirstLine(stderr.Bytes(), err))
	}
	return stdout.String(), nil
}

// HandKeys hands the model keys that egress's gateway holds (names,
// generator.HeldKeyNames) to it, each value from environ (agentbox's
// environment with the secrets file's), on the entrypoint's standard input
// (firewall.SetKeyArg): never in a command line, an environment or a file.
// Then it says that every key it has is there (firewall.KeysDoneArg), which
// a task's agent waits for. It returns the names environ does not set:
// the gateway answers their requests with an error.
func HandKeys(ctx context.Context, e Egress, names, environ []string) (missing []string, err error) {
	if len(names) == 0 {
		return nil, nil
	}
	if err := CheckKeyValues(names, environ); err != nil {
		return nil, err
	}
	values := environValues(environ)
	for _, name := range names {
		v := values[name]
		if v == "" {
			missing = append(missing, name)
			continue
		}
		if _, err := e.Input(ctx, v+"\n", firewall.EntrypointPath, firewall.SetKeyArg, name); err != nil {
			return missing, fmt.Errorf("handing %s to the gateway: %w", name, err)
		}
	}
	if _, err := e.Input(ctx, "", firewall.EntrypointPath, firewall.KeysDoneArg); err != nil {
		return missing, fmt.Errorf("telling the gateway the keys are there: %w", err)
	}
	return missing, nil
}

// CheckKeyValues says which value of environ that the gateway would hold
// (names) it cannot: up and run call it before they start anything.
func CheckKeyValues(names, environ []string) error {
	values := environValues(environ)
	for _, name := range names {
		if v := values[name]; v != "" && !firewall.ValidCredential(v) {
			return fmt.Errorf("the value of %s is not one word of letters, digits and -._~+/= (at most 4096): the gateway cannot hold it", name)
		}
	}
	return nil
}

// environValues returns environ by name, the last winning, as in exec.
func environValues(environ []string) map[string]string {
	values := map[string]string{}
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok {
			values[name] = value
		}
	}
	return values
}
