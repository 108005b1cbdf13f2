package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseTaskDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"1s", time.Second},
		{"45s", 45 * time.Second},
		{"30m", 30 * time.Minute},
		{"4h", 4 * time.Hour},
		{"1h30m", 90 * time.Minute},
		{"1h30m15s", time.Hour + 30*time.Minute + 15*time.Second},
		{"2m30s", 150 * time.Second},
		{"1h1s", time.Hour + time.Second},
		{"90m", 90 * time.Minute},
		{"0h5m", 5 * time.Minute},
		{"007m", 7 * time.Minute},
		{"168h", MaxTaskDuration},
		{"167h59m60s", MaxTaskDuration},
		{"604800s", MaxTaskDuration},
		{"10080m", MaxTaskDuration},
	} {
		got, err := ParseTaskDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseTaskDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseTaskDurationRejects(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "invalid duration"},
		{"30", "invalid duration"},
		{"m", "invalid duration"},
		{"1.5h", "invalid duration"},
		{"500ms", "invalid duration"},
		{"10us", "invalid duration"},
		{"-5m", "invalid duration"},
		{"+5m", "invalid duration"},
		{"5 m", "invalid duration"},
		{" 5m", "invalid duration"},
		{"5M", "invalid duration"},
		{"1d", "invalid duration"},
		{"30m1h", "invalid duration"},
		{"1h1h", "invalid duration"},
		{"1h 30m", "invalid duration"},
		{"１m", "invalid duration"}, // a full-width digit
		{"0s", "must be positive"},
		{"0h0m0s", "must be positive"},
		{"168h1s", "over the maximum of 7 days"},
		{"169h", "over the maximum of 7 days"},
		{"604801s", "over the maximum of 7 days"},
		{"99999999999999999999h", "over the maximum of 7 days"},
		{"9223372036s", "over the maximum of 7 days"},
	} {
		got, err := ParseTaskDuration(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseTaskDuration(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.want)
		}
		if err != nil && tt.want == "invalid duration" && !strings.Contains(err.Error(), "such as 30m, 4h or 1h30m") {
			t.Errorf("ParseTaskDuration(%q): the error gives no example: %v", tt.in, err)
		}
	}
}

func TestFormatTaskDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second:                       "1s",
		30 * time.Minute:                  "30m",
		4 * time.Hour:                     "4h",
		90 * time.Minute:                  "1h30m",
		time.Hour + time.Second:           "1h1s",
		MaxTaskDuration:                   "168h",
		time.Hour + 1500*time.Millisecond: "1h1s", // whole seconds, rounded down
	} {
		if got := FormatTaskDuration(d); got != want {
			t.Errorf("FormatTaskDuration(%v) = %q, want %q", d, got, want)
		}
		if d%time.Second == 0 {
			if back, err := ParseTaskDuration(want); err != nil || back != d {
				t.Errorf("ParseTaskDuration(%q) = %v, %v; want %v", want, back, err, d)
			}
		}
	}
}

func TestRunSection(t *testing.T) {
	for _, tt := range []struct {
		yaml         string
		timeout, max time.Duration
		env          []string
	}{
		{"{}", DefaultRunTimeout, DefaultRunMaxTimeout, nil},
		{"run: ~", DefaultRunTimeout, DefaultRunMaxTimeout, nil},
		{"run: {timeout: 1h, max_timeout: 2h}", time.Hour, 2 * time.Hour, nil},
		{"run: {timeout: 4h}", 4 * time.Hour, DefaultRunMaxTimeout, nil},
		{"run: {max_timeout: 10m}", 10 * time.Minute, 10 * time.Minute, nil}, // the default timeout never passes the maximum
		{"run: {max_timeout: 168h}", DefaultRunTimeout, MaxTaskDuration, nil},
		{"run: {env: [ZED, API_KEY]}\nenv: {OTHER: x}", DefaultRunTimeout, DefaultRunMaxTimeout, []string{"API_KEY", "ZED"}},
	} {
		cfg, err := loadString(t, tt.yaml)
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		if cfg.RunTimeout != tt.timeout || cfg.RunMaxTimeout != tt.max || !slices.Equal(cfg.RunEnv, tt.env) {
			t.Errorf("%q: got %v %v %q, want %v %v %q", tt.yaml, cfg.RunTimeout, cfg.RunMaxTimeout, cfg.RunEnv, tt.timeout, tt.max, tt.env)
		}
	}
}

func TestRunSectionRejects(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"run: {timeout: 1.5h}", `:1:16: run.timeout: invalid duration "1.5h"`},
		{"run: {max_timeout: 8d}", `:1:20: run.max_timeout: invalid duration "8d"`},
		{"run: {timeout: 0s}", `run.timeout: duration "0s" must be positive`},
		{"run: {max_timeout: 169h}", `run.max_timeout: duration "169h" is over the maximum of 7 days (168h)`},
		{"run: {timeout: 5h}", `:1:16: run.timeout: timeout 5h is over run.max_timeout 4h (the default)`},
		{"run: {timeout: 2h, max_timeout: 90m}", `:1:16: run.timeout: timeout 2h is over run.max_timeout 90m (at 1:33)`},
		{"run: {env: [1X]}", `:1:13: run.env[0]: invalid environment variable name "1X"`},
		{"run: {env: [AGENTBOX_TASK]}", `run.env[0]: "AGENTBOX_TASK" is reserved: agentbox sets AGENTBOX_* variables in the agent itself`},
		{"env: {TOKEN: x}\nrun: {env: [TOKEN]}", `:2:13: run.env[0]: "TOKEN" is also set in env (at 1:14); a variable comes from agentbox.yaml or from the host, not both`},
		{"run: {env: [A, B, A]}", `:1:19: run.env[2]: "A" is listed twice (at 1:13)`},
	} {
		_, err := loadString(t, tt.yaml)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

// TestRunSectionOneErrorEach: a duration that does not parse is not also
// compared with the other.
func TestRunSectionOneErrorEach(t *testing.T) {
	for _, src := range []string{
		"run: {timeout: 8h, max_timeout: 169h}",
		"run: {timeout: 1x, max_timeout: 1m}",
		"run: {timeout: 1x}",
	} {
		_, err := loadString(t, src)
		if err == nil || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%q: want one error, got %v", src, err)
		}
	}
}
