package sandbox

// The containers, images and volumes of a task of agentbox run, by id or
// name.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// HasVolume reports whether the volume name exists.
func (d Docker) HasVolume(ctx context.Context, name string) bool {
	_, err := d.output(ctx, "volume", "inspect", "--format", "{{.Name}}", name)
	return err == nil
}

// ImageCreated is when the image was built.
func (d Docker) ImageCreated(ctx context.Context, image string) (time.Time, error) {
	out, err := d.output(ctx, "image", "inspect", "--format", "{{.Created}}", image)
	if err != nil {
		return time.Time{}, err
	}
	return time.Parse(time.RFC3339Nano, strings.TrimSpace(string(out)))
}

// StopContainers stops the containers ids, each with a second to end.
func (d Docker) StopContainers(ctx context.Context, ids ...string) error {
	return d.runner().Run(ctx, Cmd{Args: append([]string{d.Path, "stop", "--time", "1"}, ids...)})
}

// WaitContainer waits until the container id ends.
func (d Docker) WaitContainer(ctx context.Context, id string) error {
	return d.runner().Run(ctx, Cmd{Args: []string{d.Path, "wait", id}})
}

// ContainerLogs writes the output of the container id: docker logs with
// the flags args.
func (d Docker) ContainerLogs(ctx context.Context, id string, args []string, stdout, stderr io.Writer) error {
	argv := append(append([]string{d.Path, "logs"}, args...), id)
	return d.runner().Run(ctx, Cmd{Args: argv, Stdout: stdout, Stderr: stderr})
}

// LogStream is the output of the container id with timestamps, stdout and
// stderr together, as StartLog gives it.
func (d Docker) LogStream(ctx context.Context, id string) io.ReadCloser {
	pr, pw := io.Pipe()
	tail := &tailWriter{w: pw}
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := d.runner().Run(ctx, Cmd{Args: []string{d.Path, "logs", "--timestamps", id}, Stdout: tail, Stderr: tail})
		if err != nil {
			pw.CloseWithError(fmt.Errorf("docker logs: %s", FirstLine(tail.last(), err)))
			return
		}
		pw.Close()
	}()
	return &cmdReader{pr, done}
}

// RunContainer runs docker run with args.
func (d Docker) RunContainer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return d.runner().Run(ctx, Cmd{Args: append([]string{d.Path, "run"}, args...), Stdout: stdout, Stderr: stderr})
}
