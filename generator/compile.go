package generator

import (
	"fmt"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// The pipeline's one entry point: load, plan, render and check in one call,
// stopping where the caller asks.

// Stage is where Compile stops.
type Stage int

const (
	// Checked renders the sandbox's files and checks each with its
	// ecosystem's parser: the whole pipeline (generate, up, bump).
	Checked Stage = iota
	// Planned stops after the plan (defaults, catalogs, the lock's pins):
	// enough to explain the sandbox (explain, diff).
	Planned
	// Loaded stops once agentbox.yaml is validated; agentbox.lock is not
	// read (validate, bump before it resolves).
	Loaded
)

// CompileOptions selects a variant of Compile. The zero value compiles
// dir/agentbox.yaml with dir/agentbox.lock into checked files and does not
// look at the paths the sandbox mounts.
type CompileOptions struct {
	// Until is the last stage run.
	Until Stage
	// CheckMounts also checks every path the sandbox mounts (CheckMounts),
	// for commands that write or start the sandbox; those that only stop or
	// inspect it must work whatever links the agent left behind.
	CheckMounts bool
	// Source, when not nil, is agentbox.yaml and agentbox.lock held in
	// memory: neither is read from dir.
	Source *Source
	// Config, when not nil, replaces agentbox.yaml: a configuration the
	// caller has loaded already (bump).
	Config *config.Config
	// Lock, when not nil, replaces agentbox.lock (bump's new lock).
	Lock *lockfile.Lock
	// Memo, when not nil, remembers the files that passed the check
	// stage; a file it knows is not parsed again.
	Memo CheckMemo
}

// CheckMemo remembers checks that passed, by a key that names everything
// a check reads (checkmemo.Memo keeps them on disk, per binary). The check
// stage calls it from several goroutines at once.
type CheckMemo interface {
	Passed(key string) bool
	Pass(key string)
}

// Source is an agentbox.yaml and an agentbox.lock held in memory.
type Source struct {
	File   string // names agentbox.yaml in messages
	Config []byte
	Lock   []byte // nil: there is no lock
}

// Compiled is what Compile produced, up to the stage it stopped at.
type Compiled struct {
	Config *config.Config
	Lock   *lockfile.Lock    // nil when there is none
	Files  map[string][]byte // path -> bytes; nil before Checked

	file string            // agentbox.yaml as messages name it
	pos  yamlpos.Positions // nil when Config was given
	plan *Plan             // nil before Planned
}

// Plan returns the plan; nil before Planned.
func (c *Compiled) Plan() *Plan { return c.plan }

// Positions returns where each key of agentbox.yaml is written; nil when
// the Config was given rather than read.
func (c *Compiled) Positions() yamlpos.Positions { return c.pos }

// Compile compiles dir/agentbox.yaml and dir/agentbox.lock into the files of
// the sandbox, or as far as o.Until asks. Error messages name the files as
// dir/agentbox.yaml, so dir should be the path as the user wrote it. It
// writes nothing.
func Compile(dir string, o CompileOptions) (*Compiled, error) {
	c, err := compileUntil(dir, o)
	if err != nil {
		return nil, err
	}
	if o.CheckMounts {
		if err := CheckMounts(dir, c.Config); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// compileUntil runs the stages up to o.Until.
func compileUntil(dir string, o CompileOptions) (*Compiled, error) {
	c, err := load(dir, o)
	if err != nil || o.Until == Loaded {
		return c, err
	}
	errs := &yamlpos.Errors{File: c.file}
	c.plan = plan(c.Config, c.Lock, errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if o.Until == Planned {
		return c, nil
	}
	files, err := render(c.plan)
	if err != nil {
		return nil, fmt.Errorf("internal error (please report it): %w", err)
	}
	if err := check(files, dir, c.plan.Name, o.Memo); err != nil {
		return nil, fmt.Errorf("internal error: a generated file failed its check (please report it): %w", err)
	}
	c.Files = files
	return c, nil
}

// load runs the load stage for Compile: agentbox.yaml from o.Source, o.Config
// or dir, and, past Loaded, agentbox.lock from o.Lock, o.Source or dir.
func load(dir string, o CompileOptions) (*Compiled, error) {
	c := &Compiled{Config: o.Config, Lock: o.Lock, file: displayPath(dir, config.ConfigFile)}
	var err error
	switch {
	case o.Source != nil:
		c.file = o.Source.File
		c.Config, c.pos, err = config.Decode(o.Source.File, o.Source.Config, dir)
	case o.Config == nil:
		c.Config, c.pos, err = config.Load(dir)
	}
	if err != nil {
		return nil, err
	}
	if c.Lock != nil || o.Until == Loaded {
		return c, nil
	}
	switch {
	case o.Source == nil:
		c.Lock, err = lockfile.Read(dir)
	case o.Source.Lock != nil:
		file := strings.TrimSuffix(o.Source.File, config.ConfigFile) + lockfile.File
		c.Lock, err = lockfile.Parse(file, o.Source.Lock)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}
