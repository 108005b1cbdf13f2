package generator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// PolicyEdit is what an edit of an allowlist in agentbox.yaml did
// (EditPolicy).
type PolicyEdit struct {
	Config  *config.Config // agentbox.yaml after the edit; nil when nothing changed
	Section []string       // the network section edited
	Changed []config.PolicyEntry
	Already []config.PolicyEntry // entries to add that the list has already
	Files   []Change             // what the write changed
}

// EditPolicy adds entries to the allowlist of profile in the project in
// dir (cfg is its agentbox.yaml), or removes them, in place
// (config.AddPolicy, config.RemovePolicy), compiles the result, and writes
// agentbox.yaml with the generated files, all or nothing. An entry to add
// that config.PolicyRefused refuses stops the edit. The edit returned
// holds what was done so far even with an error.
func EditPolicy(dir string, cfg *config.Config, profile string, entries []config.PolicyEntry, remove bool) (*PolicyEdit, error) {
	ed := &PolicyEdit{}
	section, err := config.PolicySection(cfg, profile)
	if err != nil {
		return ed, err
	}
	ed.Section = section
	data, err := ReadConfig(dir)
	if err != nil {
		return ed, err
	}
	for _, e := range entries {
		if data, err = ed.apply(cfg, profile, data, e, remove); err != nil {
			return ed, err
		}
	}
	if len(ed.Changed) == 0 {
		return ed, nil
	}
	lock, err := os.ReadFile(filepath.Join(dir, lockfile.File))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ed, err
	}
	c, err := Compile(dir, CompileOptions{CheckMounts: true,
		Source: &Source{File: filepath.Join(dir, config.ConfigFile), Config: data, Lock: lock}})
	if err != nil {
		return ed, err
	}
	ed.Config = c.Config
	ed.Files, err = WriteConfig(dir, data, c.Files)
	return ed, err
}

// apply adds e to data's allowlist, or removes it, and notes it.
func (ed *PolicyEdit) apply(cfg *config.Config, profile string, data []byte, e config.PolicyEntry, remove bool) ([]byte, error) {
	if remove {
		out, was, err := config.RemovePolicy(data, ed.Section, e)
		if err != nil {
			return nil, err
		}
		ed.Changed = append(ed.Changed, was)
		return out, nil
	}
	if err := config.PolicyRefused(cfg, profile, e); err != nil {
		if e.Name == "" {
			return nil, fmt.Errorf("refusing to add %s: %w (policy add adds none of these; network.cidrs may list one: write it there by hand)", e, err)
		}
		return nil, fmt.Errorf("refusing to add %s: %w", e, err)
	}
	out, err := config.AddPolicy(data, ed.Section, e)
	if errors.Is(err, config.ErrPolicyUnchanged) {
		ed.Already = append(ed.Already, e)
		return data, nil
	} else if err != nil {
		return nil, err
	}
	ed.Changed = append(ed.Changed, e)
	return out, nil
}
