package bump

import (
	"fmt"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// imageNode is the Node.js an agent image runs its CLI with, as far as bump
// can tell: a range of versions, from low to high.
type imageNode struct {
	low, high npm.Version
	what      string // "Node 24 of the base image node:24-bookworm-slim"
}

// nodeTagRe is an official node image's tag: a version, whole or partial,
// and a variant ("24-bookworm-slim", "22.12", "24.11.1-slim").
var nodeTagRe = regexp.MustCompile(`^([0-9]+)(?:\.([0-9]+)(?:\.([0-9]+))?)?(?:-[a-z0-9.-]+)?$`)

// agentNode says which Node the agent image will have. A base image named
// node (any registry or namespace: "node", "mirror.example/library/node")
// with a version tag brings its own npm, so the image runs that Node: the
// versions the tag covers. Any other base gets Debian's nodejs, pinned in
// the lock, when it has no npm (the Dockerfile installs it then); bump
// does not look for a Node inside a base image, so it takes that Node for
// such a base.
// ok is false when neither is known (a node image tagged "lts", a lock
// without a nodejs pin).
func agentNode(spec config.ImageSpec, d *lockfile.Debian) (imageNode, bool) {
	if path.Base(spec.Ref.Repo) == "node" {
		m := nodeTagRe.FindStringSubmatch(spec.Ref.Tag)
		if m == nil {
			return imageNode{}, false
		}
		low, high := npm.Version{}, npm.Version{Minor: math.MaxUint32, Patch: math.MaxUint32}
		for i, p := range []*uint64{&low.Major, &low.Minor, &low.Patch} {
			if m[i+1] == "" {
				break
			}
			n, _ := strconv.ParseUint(m[i+1], 10, 32)
			*p = n
			*[]*uint64{&high.Major, &high.Minor, &high.Patch}[i] = n
		}
		v := strings.Join(slices.DeleteFunc(m[1:4], func(s string) bool { return s == "" }), ".")
		return imageNode{low, high, fmt.Sprintf("Node %s of the base image %s", v, spec.Ref.Tagged())}, true
	}
	if d == nil {
		return imageNode{}, false
	}
	rel, ok := d.Release(spec.Ref)
	if !ok {
		return imageNode{}, false
	}
	var n imageNode
	var seen []string
	for _, arch := range slices.Sorted(maps.Keys(d.Pins[rel])) {
		deb, ok := d.Pins[rel][arch].Versions["nodejs"]
		if !ok {
			continue
		}
		v, err := npm.ParseVersion(debianUpstream(deb))
		if err != nil {
			return imageNode{}, false
		}
		if len(seen) == 0 || npm.Compare(v, n.low) < 0 {
			n.low = v
		}
		if len(seen) == 0 || npm.Compare(v, n.high) > 0 {
			n.high = v
		}
		if !slices.Contains(seen, v.String()) {
			seen = append(seen, v.String())
		}
	}
	if len(seen) == 0 {
		return imageNode{}, false
	}
	n.what = fmt.Sprintf("Debian %s's nodejs %s, which agentbox installs because the base image %s is not a node image (one with its own npm would keep its own Node, which bump does not look for)",
		rel, strings.Join(seen, " / "), spec.Ref.Tagged())
	return n, true
}

// suggestNode names the official node image of the lowest major version
// that meets r whole, if one does from 18 to 99.
func suggestNode(r npm.Range) string {
	for m := uint64(18); m < 100; m++ {
		if r.Satisfies(npm.Version{Major: m}) && r.Satisfies(npm.Version{Major: m, Minor: math.MaxUint32, Patch: math.MaxUint32}) {
			return fmt.Sprintf(" (such as node:%d-bookworm-slim)", m)
		}
	}
	return ""
}

// debianUpstream returns the upstream part of a Debian version:
// "18.19.0" of "18.19.0+dfsg-6~deb12u2".
func debianUpstream(v string) string {
	if _, rest, ok := strings.Cut(v, ":"); ok {
		v = rest
	}
	if i := strings.IndexAny(v, "+~-"); i >= 0 {
		v = v[:i]
	}
	return v
}

// checkNode compares the engines.node of every package of the tree with
// the image's Node: the agent CLI's unmet is an error at the key that chose
// the base image, a dependency's a warning (npm installs it; it may fail
// at run time). A Node bump cannot know is a warning.
func checkNode(spec config.ImageSpec, d *lockfile.Debian, t *npm.Tree) (warnings []string, err error) {
	top := "node_modules/" + t.Name
	node, ok := agentNode(spec, d)
	if !ok {
		if rng := t.NodeEngines[top]; rng != "" {
			warnings = append(warnings, fmt.Sprintf("%s@%s needs Node %q, and bump cannot tell which Node the base image %s has (a node image tag with a version, such as node:24-bookworm-slim, says it)",
				t.Name, t.Version, rng, spec.Ref.Tagged()))
		}
		return warnings, nil
	}
	for _, p := range slices.Sorted(maps.Keys(t.NodeEngines)) {
		rng := t.NodeEngines[p]
		name := t.Name
		if e := t.Packages[p]; p != top {
			name = p[strings.LastIndex(p, "node_modules/")+len("node_modules/"):]
			if e.Name != "" {
				name = e.Name
			}
		}
		pkg := name + "@" + t.Packages[p].Version
		r, perr := npm.ParseRange(rng)
		switch {
		case perr != nil:
			warnings = append(warnings, fmt.Sprintf("%s needs Node %q, which is not a range npm reads: not checked", pkg, rng))
		case r.Satisfies(node.low) && r.Satisfies(node.high):
		case p == top && !r.Satisfies(node.low) && !r.Satisfies(node.high):
			errs := &yamlpos.Errors{File: config.ConfigFile}
			errs.Add(spec.Pos, spec.Path, "%s needs Node %q, and the agent image will have %s: set image.base in agentbox.yaml to a base image with a Node that meets it%s, and run \"agentbox bump\" again",
				pkg, rng, node.what, suggestNode(r))
			return nil, errs.Err()
		case !r.Satisfies(node.low) && !r.Satisfies(node.high):
			warnings = append(warnings, fmt.Sprintf("%s needs Node %q (a dependency of %s; npm installs it, it may fail when used), and the agent image will have %s", pkg, rng, t.Name, node.what))
		default:
			warnings = append(warnings, fmt.Sprintf("%s needs Node %q, which only some versions of %s meet", pkg, rng, node.what))
		}
	}
	return warnings, nil
}
