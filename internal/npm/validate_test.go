package npm

import "testing"

func TestValidNames(t *testing.T) {
	cases := []struct {
		name     string
		valid    bool // ValidName
		validNew bool // ValidNewName
	}{
		{"opencode-ai", true, true},
		{"@openai/codex", true, true},
		{"a.b~c_d", true, true},
		{"_legacy", true, false},
		{"@scope/_legacy", true, false},
		{"Not/Valid", false, false},
		{"UPPER", false, false},
		{"", false, false},
		{"@scope/", false, false},
	}
	for _, c := range cases {
		if got := ValidName(c.name); got != c.valid {
			t.Errorf("ValidName(%q) = %v, want %v", c.name, got, c.valid)
		}
		if got := ValidNewName(c.name); got != c.validNew {
			t.Errorf("ValidNewName(%q) = %v, want %v", c.name, got, c.validNew)
		}
	}
}
