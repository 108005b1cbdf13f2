package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/generator"
)

// The builds' base images are pulled by the daemon before compose builds:
// `docker pull` goes through the daemon's registry mirrors, where Engine
// 20.10's builder asks Docker Hub itself for a FROM it does not have, so
// behind a mirror a build could not start. An image the daemon has is not
// asked for again (the references are pinned by digest).

// BaseImages are the FROM references of the generated Dockerfiles in
// dir/.agentbox, each once, in the files' order.
func BaseImages(dir string) ([]string, error) {
	var refs []string
	seen := map[string]bool{}
	for _, name := range []string{"egress.Dockerfile", "agent.Dockerfile"} {
		data, err := os.ReadFile(filepath.Join(dir, generator.OutDir, name))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
				continue
			}
			ref := f[1]
			if strings.HasPrefix(ref, "--") && len(f) > 2 { // FROM --platform=… ref
				ref = f[2]
			}
			if !strings.Contains(ref, "@sha256:") || seen[ref] {
				continue // a stage's name, or not pinned: the builder's to resolve
			}
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	return refs, nil
}

// PullBases pulls the base images of the project in dir that the daemon
// does not have, saying so on stderr (docker pull's own progress goes
// there too).
func (d Docker) PullBases(ctx context.Context, dir string, stderr io.Writer) error {
	refs, err := BaseImages(dir)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if _, err := d.output(ctx, "image", "inspect", "--format", "{{.Id}}", ref); err == nil {
			continue
		}
		fmt.Fprintf(stderr, "agentbox: pulling the base image %s (through Docker's registry mirrors, if it has any)\n", ref)
		var out bytes.Buffer
		if err := d.runner().Run(ctx, Cmd{Args: []string{d.Path, "pull", ref}, Stdout: io.Discard, Stderr: &out}); err != nil {
			return fmt.Errorf("docker pull %s: %s", ref, FirstLine(out.Bytes(), err))
		}
	}
	return nil
}
