package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckRepo: with agentbox's workflow in the repository, its block of
// .gitattributes is drift when missing or changed; with or without it, a
// .gitattributes line that folds a file a reviewer must read (agentbox.yaml,
// the workflow, .gitattributes) is drift, named by file and line. A later
// line that unsets the attribute undoes it.
func TestCheckRepo(t *testing.T) {
	wf := "# " + CIHeader + "\nname: agentbox\n"
	block := func(dir string) string { return string(gitattributesBlock(dir, "\n")) }
	for _, tt := range []struct {
		name  string
		dir   string
		files map[string]string
		want  []string // in the report; none: no drift
	}{
		{"nothing", ".", map[string]string{}, nil},
		{"no workflow, no block", ".", map[string]string{".gitattributes": "*.png binary\n"}, nil},
		{"workflow and block", ".", map[string]string{GitHubWorkflow: wf, ".gitattributes": "*.png binary\n\n" + block(".")}, nil},
		{"workflow, no .gitattributes", ".", map[string]string{GitHubWorkflow: wf},
			[]string{".gitattributes: agentbox's block is missing", "agentbox ci github"}},
		{"workflow, block removed", ".", map[string]string{GitHubWorkflow: wf, ".gitattributes": "*.png binary\n"},
			[]string{".gitattributes: agentbox's block is missing"}},
		{"block edited", ".", map[string]string{".gitattributes": strings.Replace(block("."), "agentbox.lock linguist-generated\n", "", 1)},
			[]string{".gitattributes:1: agentbox's block differs", "+agentbox.lock linguist-generated"}},
		{"block without end", ".", map[string]string{GitHubWorkflow: wf, ".gitattributes": attrBegin + "\n"},
			[]string{".gitattributes: ", "no end line"}},
		{"config marked generated", ".", map[string]string{".gitattributes": "*.png binary\nagentbox.yaml linguist-generated\n"},
			[]string{`.gitattributes:2: "agentbox.yaml linguist-generated" folds agentbox.yaml`}},
		{"inside the block", ".", map[string]string{GitHubWorkflow: wf, ".gitattributes": strings.Replace(block("."), attrEnd, "agentbox.yaml linguist-generated\n"+attrEnd, 1)},
			[]string{".gitattributes:1: agentbox's block differs", `.gitattributes:5: "agentbox.yaml linguist-generated" folds agentbox.yaml`}},
		{"every yaml", ".", map[string]string{".gitattributes": "*.yaml linguist-generated=true\n"},
			[]string{`.gitattributes:1: "*.yaml linguist-generated=true" folds agentbox.yaml`}},
		{"unset after", ".", map[string]string{".gitattributes": "* linguist-generated\n*.png -linguist-generated\nagentbox.yaml -linguist-generated\n.github/** -linguist-generated\n.gitattributes linguist-generated=false\n"}, nil},
		{"everything", ".", map[string]string{".gitattributes": "* linguist-generated\n"},
			[]string{`.gitattributes:1: "* linguist-generated" folds agentbox.yaml`, "folds .github/workflows/agentbox.yml", "folds .gitattributes"}},
		{"no diff", ".", map[string]string{".gitattributes": "/agentbox.yaml -diff\n"},
			[]string{`.gitattributes:1: "/agentbox.yaml -diff" folds agentbox.yaml`}},
		{"binary", ".", map[string]string{".gitattributes": "agentbox.* binary\n"},
			[]string{`.gitattributes:1: "agentbox.* binary" folds agentbox.yaml`}},
		{"a macro", ".", map[string]string{".gitattributes": "[attr]hide linguist-generated\nagentbox.yaml hide\n"},
			[]string{`.gitattributes:2: "agentbox.yaml hide" folds agentbox.yaml`}},
		{"a subdirectory's file", "sub", map[string]string{"sub/.gitattributes": "\n**/agentbox.yaml -diff\n"},
			[]string{`sub/.gitattributes:2: "**/agentbox.yaml -diff" folds sub/agentbox.yaml`}},
		{"another project's directory", "sub", map[string]string{"other/.gitattributes": "agentbox.yaml -diff\n"}, nil},
		{"the workflow", ".", map[string]string{".github/workflows/.gitattributes": "*.yml linguist-generated\n"},
			[]string{`.github/workflows/.gitattributes:1: "*.yml linguist-generated" folds .github/workflows/agentbox.yml`}},
		{"a path pattern", "tools/box", map[string]string{".gitattributes": "tools/**/agentbox.yaml linguist-generated\n"},
			[]string{`.gitattributes:1: "tools/**/agentbox.yaml linguist-generated" folds tools/box/agentbox.yaml`}},
		{".github a file", ".", map[string]string{".github": "x\n", ".gitattributes": "*.png binary\n"}, nil},
		{"a path pattern elsewhere", "tools/box", map[string]string{".gitattributes": "other/**/agentbox.yaml linguist-generated\n"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for p, data := range tt.files {
				full := filepath.Join(root, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := CheckRepo(root, tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.want) == 0 && got != "" {
				t.Errorf("drift reported:\n%s", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("the report lacks %q:\n%s", w, got)
				}
			}
		})
	}
}
