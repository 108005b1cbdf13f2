package debian

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrIndexTooLarge is returned when a Packages index exceeds the bound its
// reader was given.
var ErrIndexTooLarge = errors.New("Packages index is too large")

// Package is one stanza of a Packages index, with the fields agentbox reads.
// Relation fields keep their text, continuation lines joined by a space.
type Package struct {
	Name, Version, Architecture   string
	Depends, PreDepends, Provides string
}

// ParsePackages reads a decompressed Packages index (stanzas of "Field:
// value" lines separated by blank lines) and returns its packages in order.
// It reads at most limit bytes: a longer index is an ErrIndexTooLarge. A
// stanza without a valid Package and Version, a NUL byte or a line that is
// not a field is an error naming the line.
func ParsePackages(r io.Reader, limit int64) ([]Package, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, limit+1), 64<<10)
	var p parser
	var read int64
	for {
		line, err := br.ReadString('\n')
		read += int64(len(line))
		if read > limit {
			return nil, fmt.Errorf("%w: more than %d bytes decompressed", ErrIndexTooLarge, limit)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading Packages index: %w", err)
		}
		if line != "" {
			if perr := p.line(strings.TrimSuffix(line, "\n")); perr != nil {
				return nil, fmt.Errorf("Packages index %w", perr)
			}
		}
		if err == io.EOF {
			break
		}
	}
	if err := p.end(); err != nil {
		return nil, fmt.Errorf("Packages index %w", err)
	}
	return p.out, nil
}

// parser holds the state of ParsePackages between lines.
type parser struct {
	out    []Package
	n      int               // number of the current line
	start  int               // line where the current stanza began; 0 outside one
	fields map[string]string // the kept fields of the current stanza
	field  string            // the kept field continuation lines extend; "" if ignored
	inside bool              // a field line has been seen in this stanza
}

// kept maps the lower-case names of the fields agentbox reads to their
// canonical spelling.
var kept = map[string]string{
	"package": "Package", "version": "Version", "architecture": "Architecture",
	"depends": "Depends", "pre-depends": "Pre-Depends", "provides": "Provides",
}

// line takes one line, without its newline. Its errors begin "line N: ".
func (p *parser) line(s string) error {
	p.n++
	if err := p.check(s); err != nil {
		return fmt.Errorf("line %d: %w", p.n, err)
	}
	return nil
}

func (p *parser) check(s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return errors.New("NUL byte")
	}
	if strings.TrimSpace(s) == "" {
		return p.end()
	}
	if s[0] == ' ' || s[0] == '\t' {
		if !p.inside {
			return errors.New("continuation line outside a field")
		}
		if p.field != "" {
			p.fields[p.field] += " " + strings.TrimSpace(s)
		}
		return nil
	}
	name, value, ok := strings.Cut(s, ":")
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return errors.New(`not a "Field: value" line`)
	}
	if p.start == 0 {
		p.start, p.fields = p.n, map[string]string{}
	}
	p.inside, p.field = true, kept[strings.ToLower(name)]
	if p.field == "" {
		return nil
	}
	if _, dup := p.fields[p.field]; dup {
		return fmt.Errorf("duplicate field %q", p.field)
	}
	p.fields[p.field] = strings.TrimSpace(value)
	return nil
}

// end closes the current stanza, if any, and checks its Package and Version.
// Its errors begin "line N: " with the line where the stanza began.
func (p *parser) end() error {
	if p.start == 0 {
		return nil
	}
	if err := p.stanza(); err != nil {
		return fmt.Errorf("line %d: %w", p.start, err)
	}
	p.start, p.fields, p.field, p.inside = 0, nil, "", false
	return nil
}

func (p *parser) stanza() error {
	f := p.fields
	name, version := f["Package"], f["Version"]
	switch {
	case name == "":
		return errors.New("stanza has no Package")
	case !ValidPackageName(name):
		return fmt.Errorf("invalid package name %q", name)
	case version == "":
		return fmt.Errorf("stanza of package %q has no Version", name)
	case !ValidVersion(version):
		return fmt.Errorf("package %q has an invalid Version %q", name, version)
	}
	p.out = append(p.out, Package{
		Name: name, Version: version, Architecture: f["Architecture"],
		Depends: f["Depends"], PreDepends: f["Pre-Depends"], Provides: f["Provides"],
	})
	return nil
}
