package generator

import (
	"strings"
	"testing"
)

const (
	blockRoot = attrBegin + "\n" +
		".agentbox/** linguist-generated\n" +
		".devcontainer/devcontainer.json linguist-generated\n" +
		"agentbox.lock linguist-generated\n" +
		attrEnd + "\n"
	blockSub = attrBegin + "\n" +
		"sub/.agentbox/** linguist-generated\n" +
		"sub/.devcontainer/devcontainer.json linguist-generated\n" +
		"sub/agentbox.lock linguist-generated\n" +
		attrEnd + "\n"
)

func TestMergeGitattributes(t *testing.T) {
	for _, tt := range []struct {
		name, old, dir, want string
	}{
		{"none", "", ".", blockRoot},
		{"subdir", "", "sub", blockSub},
		{"unrelated lines kept", "*.png binary\n# mine\n\n", ".", "*.png binary\n# mine\n\n\n" + blockRoot},
		{"no final newline", "*.png binary", ".", "*.png binary\n\n" + blockRoot},
		{"odd bytes kept", "a  text eol=lf \t\n*.sh\t-text\n", ".", "a  text eol=lf \t\n*.sh\t-text\n\n" + blockRoot},
		{"updated in place", "top\n" + blockRoot + "bottom\n", "sub", "top\n" + blockSub + "bottom\n"},
		{"stale block replaced", "top\n" + attrBegin + "\nold/** linguist-generated\n" + attrEnd + "\nbottom", ".", "top\n" + blockRoot + "bottom"},
		{"block last without newline", "top\n" + strings.TrimSuffix(blockSub, "\n"), ".", "top\n" + strings.TrimSuffix(blockRoot, "\n")},
		{"crlf", "*.png binary\r\n", ".", "*.png binary\r\n\r\n" + strings.ReplaceAll(blockRoot, "\n", "\r\n")},
		{"crlf in place", "a\r\n" + strings.ReplaceAll(blockSub, "\n", "\r\n") + "b\r\n", ".", "a\r\n" + strings.ReplaceAll(blockRoot, "\n", "\r\n") + "b\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeGitattributes([]byte(tt.old), tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
			again, err := MergeGitattributes(got, tt.dir)
			if err != nil || string(again) != string(got) {
				t.Errorf("second merge changed it (%v):\n%q", err, again)
			}
		})
	}
}

func TestMergeGitattributesRefuses(t *testing.T) {
	for _, tt := range []struct{ name, old, dir, want string }{
		{"no end", "a\n" + attrBegin + "\nx linguist-generated\n", ".", "has no end line"},
		{"two blocks", blockRoot + blockSub, ".", "two agentbox blocks"},
		{"bad dir", "", "a b", "path elements"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MergeGitattributes([]byte(tt.old), tt.dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
