package main

import (
	"fmt"
	"path"
)

// The generated dependency tree (-npm-tree) around the main package. Its
// ranges pick a@1.1.0 (not the prerelease 2.0.0-beta.1), b@2.1.3 at the top
// and b@1.2.0 nested under a, the alias as a second copy of a@1.1.0, and
// skip the optional win32 package on linux.
const (
	treeA     = "agentbox-e2e-a"
	treeB     = "agentbox-e2e-b"
	treeAlias = "agentbox-e2e-alias"
	treeWin32 = "agentbox-e2e-win32"
)

// mainManifest is the generated main package's package.json; with tree, it
// depends on the tree.
func mainManifest(name, version, bin string, tree bool) map[string]any {
	if bin == "" {
		bin = agentCommands[name]
	}
	if bin == "" {
		bin = path.Base(name)
	}
	m := map[string]any{
		"name":        name,
		"version":     version,
		"description": "agentbox end-to-end test stand-in for " + name,
		"license":     "MIT",
		"bin":         map[string]string{bin: "cli.js"},
	}
	if tree {
		m["dependencies"] = map[string]string{treeA: "^1.0.0", treeB: "~2.1.0", treeAlias: "npm:" + treeA + "@^1.0.0"}
		m["optionalDependencies"] = map[string]string{treeWin32: "1.0.0"}
	}
	return m
}

// mainCLI is the generated main package's command: it prints the version
// and, with tree, the versions of the tree it finds installed.
func mainCLI(name, version string, tree bool) string {
	s := fmt.Sprintf("#!/usr/bin/env node\n// agentbox end-to-end test stand-in for %s.\nconsole.log(%q);\n", name, version+" (agentbox e2e stand-in)")
	if tree {
		s += fmt.Sprintf("const a = require(%q), b = require(%q), alias = require(%q);\n", treeA, treeB, treeAlias) +
			"console.log(`tree: a ${a.version}, b ${b.version}, a's b ${a.b.version}, alias ${alias.version}`);\n"
	}
	return s
}

// treePackages are the packages of the tree, in publishing order.
func treePackages() ([]*npmPackage, error) {
	const (
		aJS = "// agentbox end-to-end test package: its version, and the " + treeB + " it resolves.\n" +
			"exports.version = require(\"./package.json\").version;\nexports.b = require(\"" + treeB + "\");\n"
		leafJS = "// agentbox end-to-end test package.\nexports.version = require(\"./package.json\").version;\n"
	)
	deps := func(r string) map[string]any { return map[string]any{"dependencies": map[string]string{treeB: r}} }
	specs := []struct {
		name, version, js string
		extra             map[string]any
	}{
		{treeA, "1.0.0", aJS, deps("^1.0.0")},
		{treeA, "1.1.0", aJS, deps("^1.0.0")},
		{treeA, "2.0.0-beta.1", aJS, deps("^2.0.0")},
		{treeB, "1.0.0", leafJS, nil},
		{treeB, "1.2.0", leafJS, nil},
		{treeB, "2.1.0", leafJS, nil},
		{treeB, "2.1.3", leafJS, nil},
		{treeB, "2.2.0", leafJS, nil},
		{treeWin32, "1.0.0", leafJS, map[string]any{"os": []string{"win32"}, "cpu": []string{"x64"}}},
	}
	var pkgs []*npmPackage
	for _, s := range specs {
		m := map[string]any{"name": s.name, "version": s.version, "main": "index.js", "license": "MIT",
			"description": "agentbox end-to-end test package"}
		for k, v := range s.extra {
			m[k] = v
		}
		p, err := generate(m, map[string]string{"index.js": s.js})
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// newNPMTree is the registry -npm-tree serves: the generated main package
// that -npm-package names, depending on the tree.
func newNPMTree(spec, bin string) (*npmRegistry, error) {
	name, version, err := parseNPMSpec(spec)
	if err != nil {
		return nil, err
	}
	main, err := generate(mainManifest(name, version, bin, true), map[string]string{"cli.js": mainCLI(name, version, true)})
	if err != nil {
		return nil, err
	}
	pkgs, err := treePackages()
	if err != nil {
		return nil, err
	}
	return newNPMRegistry(append(pkgs, main)...), nil
}
