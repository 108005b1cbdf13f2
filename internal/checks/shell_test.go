package checks

import (
	"strings"
	"testing"
)

func TestShell(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		wantErr string // "" means valid
	}{
		{"simple", "#!/bin/bash\nset -euo pipefail\necho hi\n", ""},
		{"bash features", "#!/bin/bash\nset -euo pipefail\nif [[ -n ${X:-} ]]; then\n  arr=(a b)\n  echo \"${arr[@]}\"\nfi\nexec \"$@\"\n", ""},
		{"process substitution", "while read -r l; do echo \"$l\"; done < <(printf 'a\\n')\n", ""},
		{"empty", "", ""},
		{"unclosed if", "#!/bin/bash\nif true; then\n  echo hi\n", "shell: entrypoint.sh:2:1: "},
		{"stray fi", "echo a\nfi\n", "shell: entrypoint.sh:2:1: "},
		{"unclosed quote", "echo 'abc\n", "entrypoint.sh:1:6: "},
		{"bad subst", "echo ${\n", "entrypoint.sh:1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Shell([]byte(tt.src), "entrypoint.sh")
			if err != nil {
				t.Logf("error: %v", err)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("no error, want one containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}
