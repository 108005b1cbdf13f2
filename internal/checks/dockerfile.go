package checks

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/buildkit/frontend/dockerfile/command"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// pinned reports whether s is name:tag@sha256:<64 hex>, exactly as
// github.com/distribution/reference (Docker's own grammar) parses and
// prints it.
func pinned(s string) bool {
	r, err := reference.Parse(s)
	if err != nil {
		return false
	}
	t, tagged := r.(reference.Tagged)
	d, digested := r.(reference.Digested)
	return tagged && digested && t.Tag() != "" && d.Digest().Algorithm() == "sha256" && r.String() == s
}

// Dockerfile parses data with buildkit's Dockerfile parser and requires:
// no parse warnings; only known instructions (the parser itself skips
// unknown ones); at least one FROM; and every FROM image pinned as
// name:tag@sha256:<64 lowercase hex>, unless it names an earlier stage's
// alias (stage names compare case-insensitively, as in buildkit). FROM
// flags such as --platform are allowed. "scratch" and images built from
// ARG values are rejected: neither is pinned. The same rule applies to
// images named by COPY --from and RUN --mount=...,from=..., which may also
// name an earlier stage by alias or index.
func Dockerfile(data []byte) error {
	res, err := parseDockerfile(data)
	if err != nil {
		return err
	}
	st := stages{aliases: map[string]bool{}}
	for _, n := range res.AST.Children {
		if err := st.check(n); err != nil {
			return err
		}
	}
	if st.count == 0 {
		return errors.New("dockerfile: no FROM instruction")
	}
	return nil
}

// parseDockerfile parses data with buildkit's parser, refusing what it
// warns about; errors name the line where the parser gives one.
func parseDockerfile(data []byte) (*parser.Result, error) {
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		var le *parser.LocationError
		if errors.As(err, &le) && len(le.Locations) > 0 && len(le.Locations[0]) > 0 && le.Locations[0][0].Start.Line > 0 {
			return nil, fmt.Errorf("dockerfile line %d: %w", le.Locations[0][0].Start.Line, err)
		}
		return nil, fmt.Errorf("dockerfile: %w", err)
	}
	if len(res.Warnings) > 0 {
		w := res.Warnings[0]
		if w.Location != nil {
			return nil, fmt.Errorf("dockerfile line %d: parser warning: %s", w.Location.Start.Line, w.Short)
		}
		return nil, fmt.Errorf("dockerfile: parser warning: %s", w.Short)
	}
	return res, nil
}

// stages are the stages a Dockerfile has declared so far.
type stages struct {
	aliases map[string]bool // lowercased aliases of earlier stages
	count   int
}

// check checks one instruction: a known one, after the first FROM unless
// it is an ARG, and naming only pinned images or earlier stages. A FROM
// adds its stage.
func (st *stages) check(n *parser.Node) error {
	instr := strings.ToLower(n.Value)
	if _, ok := command.Commands[instr]; !ok {
		return fmt.Errorf("dockerfile line %d: unknown instruction %q", n.StartLine, n.Value)
	}
	if instr != command.From && instr != command.Arg && st.count == 0 {
		return fmt.Errorf("dockerfile line %d: %s before the first FROM", n.StartLine, strings.ToUpper(instr))
	}
	switch instr {
	case command.From:
		alias, err := checkFrom(n, st.aliases)
		if err != nil {
			return err
		}
		st.count++
		if alias != "" {
			st.aliases[alias] = true
		}
	case command.Copy:
		return st.checkCopyFrom(n)
	case command.Run:
		return st.checkMountFrom(n)
	}
	return nil
}

// checkCopyFrom checks the image COPY --from names.
func (st *stages) checkCopyFrom(n *parser.Node) error {
	for _, f := range n.Flags {
		if v, ok := strings.CutPrefix(f, "--from="); ok {
			if err := checkSource(n.StartLine, "COPY --from", v, st.aliases, st.count); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkMountFrom checks the images RUN --mount=...,from= names.
func (st *stages) checkMountFrom(n *parser.Node) error {
	for _, f := range n.Flags {
		v, ok := strings.CutPrefix(f, "--mount=")
		if !ok {
			continue
		}
		for _, field := range strings.Split(v, ",") {
			if src, ok := strings.CutPrefix(field, "from="); ok {
				if err := checkSource(n.StartLine, "RUN --mount from", src, st.aliases, st.count); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkFrom checks one FROM node and returns its lowercased stage alias.
func checkFrom(n *parser.Node, stages map[string]bool) (string, error) {
	var args []string
	for a := n.Next; a != nil; a = a.Next {
		args = append(args, a.Value)
	}
	var image, alias string
	switch {
	case len(args) == 1:
		image = args[0]
	case len(args) == 3 && strings.EqualFold(args[1], "AS"):
		image, alias = args[0], strings.ToLower(args[2])
	default:
		return "", fmt.Errorf("dockerfile line %d: FROM wants IMAGE [AS NAME], got %q", n.StartLine, strings.Join(args, " "))
	}
	if stages[strings.ToLower(image)] {
		return alias, nil
	}
	if !pinned(image) {
		return "", fmt.Errorf("dockerfile line %d: FROM %q is not pinned as name:tag@sha256:<digest>", n.StartLine, image)
	}
	return alias, nil
}

// checkSource checks the image named by COPY --from or RUN --mount from=:
// an earlier stage (alias or index) or a pinned reference.
func checkSource(line int, what, src string, stages map[string]bool, nstages int) error {
	if stages[strings.ToLower(src)] {
		return nil
	}
	if i, err := strconv.Atoi(src); err == nil && i >= 0 && i < nstages {
		return nil
	}
	if !pinned(src) {
		return fmt.Errorf("dockerfile line %d: %s %q is neither an earlier stage nor pinned as name:tag@sha256:<digest>", line, what, src)
	}
	return nil
}
