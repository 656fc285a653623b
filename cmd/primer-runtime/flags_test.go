package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        string // PRIMER_RUNTIME_EGRESS
		wantEgress string
		wantErr    string // part of the error; empty for none
	}{
		{name: "default", wantEgress: "allow"},
		{name: "allow", args: []string{"--egress=allow"}, wantEgress: "allow"},
		{name: "deny", args: []string{"--egress", "deny"}, wantEgress: "deny"},
		{name: "internal applied", args: []string{"--egress=applied"}, wantEgress: "applied"},
		{name: "from env", env: "deny", wantEgress: "deny"},
		{name: "flag beats env", args: []string{"--egress=allow"}, env: "deny", wantEgress: "allow"},
		{name: "bad value", args: []string{"--egress=block"}, wantErr: `--egress "block"`},
		{name: "bad env", env: "DENY", wantErr: `--egress "DENY"`},
		{name: "empty", args: []string{"--egress="}, wantErr: `--egress ""`},
		{name: "positional", args: []string{"--egress=deny", "extra"}, wantErr: `unexpected argument "extra"`},
		{name: "unknown flag", args: []string{"--no-such"}, wantErr: "no-such"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PRIMER_RUNTIME_EGRESS", tt.env)
			c, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseFlags(%q) = %v, want an error containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tt.args, err)
			}
			if c.egress != tt.wantEgress {
				t.Errorf("parseFlags(%q).egress = %q, want %q", tt.args, c.egress, tt.wantEgress)
			}
		})
	}
}

// TestParseIngressFlags checks --ingress and its prefix lists, which a
// typo must not turn into an open workspace.
func TestParseIngressFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    config // only the ingress fields are compared
		wantErr string
	}{
		{name: "default", want: config{ingress: "allow"}},
		{name: "restrict", args: []string{"--ingress=restrict", "--ingress-allow=10.1.0.0/16,fd00::/64", "--ingress-except=10.1.0.1/32"},
			want: config{ingress: "restrict", ingressAllow: "10.1.0.0/16,fd00::/64", ingressExcept: "10.1.0.1/32"}},
		{name: "internal applied", args: []string{"--ingress=applied"}, want: config{ingress: "applied"}},
		{name: "bad mode", args: []string{"--ingress=deny"}, wantErr: `--ingress "deny"`},
		{name: "bad allow", args: []string{"--ingress=restrict", "--ingress-allow=10.1.0.0"}, wantErr: `--ingress-allow "10.1.0.0"`},
		{name: "bad except", args: []string{"--ingress-except=gateway"}, wantErr: `--ingress-except "gateway"`},
		{name: "listen without port", args: []string{"--listen=localhost"}, wantErr: `--listen "localhost"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseFlags(%q) = %v, want an error containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ingress != tt.want.ingress || c.ingressAllow != tt.want.ingressAllow || c.ingressExcept != tt.want.ingressExcept {
				t.Errorf("parseFlags(%q) ingress = %q %q %q, want %q %q %q", tt.args, c.ingress, c.ingressAllow, c.ingressExcept, tt.want.ingress, tt.want.ingressAllow, tt.want.ingressExcept)
			}
			back, err := parseFlags(c.args())
			if err != nil || back != c {
				t.Fatalf("parseFlags(args()) = %+v, %v; want %+v", back, err, c)
			}
		})
	}
}

// TestConfigArgs checks init hands its child exactly its own configuration,
// even what came from the environment.
func TestConfigArgs(t *testing.T) {
	t.Setenv("PRIMER_RUNTIME_EGRESS", "deny")
	t.Setenv("PRIMER_RUNTIME_ROOT", "/from/env")
	c, err := parseFlags([]string{"--listen=:9", "--debug"})
	if err != nil {
		t.Fatal(err)
	}
	c.egress = egressApplied
	want := []string{"--listen=:9", "--root=/from/env", "--debug=true", "--egress=applied"}
	if got := c.args(); !slices.Equal(got, want) {
		t.Fatalf("args() = %q, want %q", got, want)
	}
	back, err := parseFlags(c.args())
	if err != nil || back != c {
		t.Fatalf("parseFlags(args()) = %+v, %v; want %+v", back, err, c)
	}
	// Init's child also gets the reset's kill-all.
	c.killAll = true
	if got := c.args(); !slices.Equal(got, append(want, "--reset-kill-all")) {
		t.Fatalf("args() with killAll = %q", got)
	}
	if back, err := parseFlags(c.args()); err != nil || back != c {
		t.Fatalf("parseFlags(args()) = %+v, %v; want %+v", back, err, c)
	}
}

// TestParseFSFlag checks --fs: whole only when asked for, a typo refused
// rather than read as either mode, and init's child given the same.
func TestParseFSFlag(t *testing.T) {
	tests := []struct {
		name    string
		env     string
		args    []string
		want    string
		wantErr string
	}{
		{name: "default", want: "root"},
		{name: "whole", args: []string{"--fs=whole", "--user=user"}, want: "whole"},
		{name: "from the environment", env: "whole", want: "whole"},
		{name: "flag over environment", env: "whole", args: []string{"--fs=root"}, want: "root"},
		{name: "typo", args: []string{"--fs=wholee"}, wantErr: `--fs "wholee"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PRIMER_RUNTIME_FS", tt.env)
			c, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseFlags(%q) = %v, want an error containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil || c.fsMode != tt.want {
				t.Fatalf("parseFlags(%q) fs = %q, %v; want %q", tt.args, c.fsMode, err, tt.want)
			}
			t.Setenv("PRIMER_RUNTIME_FS", "")
			if back, err := parseFlags(c.args()); err != nil || back != c {
				t.Fatalf("parseFlags(args()) = %+v, %v; want %+v", back, err, c)
			}
		})
	}
}
