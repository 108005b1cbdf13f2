package generator

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/agentbox-dev/agentbox/internal/checkmemo"
	"github.com/agentbox-dev/agentbox/internal/checks"
)

// The check stage: every rendered file through its ecosystem's parser
// before anything is written.

// check runs every generated file through the parser of its ecosystem,
// the files side by side (one at a time per CPU: the compose loader and the
// shell parser are the bulk of generate's time), and reports the error of
// the first file in path order, as a run one by one would. A file memo
// (if any) saw pass is not checked again; one that passes is told to it.
func check(files map[string][]byte, dir, name string, memo CheckMemo) error {
	abs, err := filepath.Abs(filepath.Join(dir, OutDir))
	if err != nil {
		return err
	}
	paths := sortedPaths(files)
	errs := make([]error, len(paths))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if memo == nil {
				errs[i] = checkFile(path, files[path], abs, name)
				return
			}
			key := checkmemo.Key(files[path], path, abs, name)
			if memo.Passed(key) {
				return
			}
			if errs[i] = checkFile(path, files[path], abs, name); errs[i] == nil {
				memo.Pass(key)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: %w", paths[i], err)
		}
	}
	return nil
}

// checkFile checks one generated file at path: its ecosystem's parser, and
// the generated-file header. abs is the absolute .agentbox directory.
func checkFile(path string, data []byte, abs, name string) error {
	var err error
	switch {
	case path == ComposeFile:
		err = checks.Compose(data, abs, name)
	case strings.HasPrefix(path, ProfilesDir+"/") && strings.HasSuffix(path, ".compose.yml"):
		err = checks.Compose(data, filepath.Join(abs, strings.TrimPrefix(ProfilesDir, OutDir+"/")), name)
	case strings.HasSuffix(path, ".Dockerfile"):
		err = checks.Dockerfile(data)
	case strings.HasSuffix(path, ".sh"):
		err = checks.Shell(data, path)
	case path == DevcontainerFile:
		err = checks.Devcontainer(data)
	}
	if err != nil {
		return err
	}
	if !bytes.Contains(firstLines(data), []byte(Header)) {
		return errors.New("missing the generated-file header")
	}
	return nil
}
