package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// Steps hears of Up's long steps: Step says that one starts, and returns
// what says that it ended (progress.Progress; a nil *Progress says
// nothing).
type Steps interface {
	Step(what string) func(done string, err error)
}

// Up builds and starts the sandbox that w chooses (agentbox up): docker
// compose build, then up -d --wait --remove-orphans, after the checks
// that the project's .git is a directory of its own and that no other
// project owns the compose project name. It pulls the base images the
// daemon lacks first, and records the files the sandbox started from.
// stdin, stdout and stderr are compose's.
func Up(ctx context.Context, w Want, steps Steps, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := generator.CheckGitDatabase(w.Dir); err != nil {
		return err
	}
	w.Choose, w.Starts = true, true
	p, err := Open(ctx, w)
	if err != nil {
		return err
	}
	c := p.Compose
	if err := c.CheckOwner(ctx, p.Config.Name, p.Dir); err != nil {
		return err
	}
	us, err := settings.LoadUser(os.Getenv) // once: the CA file and every compose command
	if err != nil {
		return err
	}
	c.Env = EnvironWith(us)
	WarnMissingSecrets(stderr, c.Env, p.Config.Secrets)
	if err := checkSandboxKeys(p, c); err != nil {
		return err
	}
	if err := WriteLocalCA(p.Dir, us); err != nil {
		return err
	}
	if err := WriteLocalProgram(p.Dir, p.Files); err != nil {
		return err
	}
	if err := c.PullBases(ctx, p.Dir, stderr); err != nil {
		return err
	}
	done := steps.Step("building the sandbox's images (the first build takes minutes)")
	err = c.Run(ctx, stdin, stdout, stderr, "build")
	if done("the images are built", err); err != nil {
		return err
	}
	done = steps.Step("starting the sandbox (profile " + p.Profile + "; the agent starts once the firewall is up)")
	err = c.Run(ctx, stdin, stdout, stderr, "up", "-d", "--wait", "--remove-orphans")
	if done("the sandbox is up (profile "+p.Profile+")", err); err != nil {
		return err
	}
	if err := handSandboxKeys(ctx, p, c); err != nil {
		return err
	}
	if err := c.FollowEgress(ctx, stderr); err != nil {
		return err
	}
	if err := RecordUp(ctx, c.Path, p.Dir, p.Config.Name); err != nil {
		fmt.Fprintf(stderr, "agentbox: recording the files the sandbox started from (generate and shell will not say when it is older): %s\n", termsafe.Message(err.Error()))
	}
	return nil
}

// checkSandboxKeys refuses, before anything starts, a value that the
// sandbox's gateway would hold and cannot (CheckKeyValues).
func checkSandboxKeys(p *Project, c Compose) error {
	names := generator.HeldKeyNames(p.Config, p.Profile)
	if len(names) == 0 {
		return nil
	}
	env, err := c.Env("up")
	if err != nil {
		return err
	}
	return CheckKeyValues(names, env)
}

// handSandboxKeys hands the sandbox's egress the model keys of secrets
// that its gateway holds (HandKeys); up has said which are set nowhere.
func handSandboxKeys(ctx context.Context, p *Project, c Compose) error {
	var names []string
	for _, n := range generator.HeldKeyNames(p.Config, p.Profile) {
		if slices.Contains(p.Config.Secrets, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	env, err := c.Env("up")
	if err != nil {
		return err
	}
	_, err = HandKeys(ctx, ComposeEgress(c.Argv), names, env)
	return err
}
