package client

import (
	"errors"
	"path"
	"slices"
	"strings"
	"testing"
)

// The safe sets of both OSes, as stdio_unix.go and stdio_windows.go give
// them, so the rules of each are tested on every OS.
var (
	unixSafeEnv = []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL",
		"LANG", "LC_*", "TZ",
		"TMPDIR", "TEMP", "TMP", "XDG_*",
		"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
	}
	windowsSafeEnv = append(slices.Clone(unixSafeEnv),
		"PATHEXT", "SystemRoot", "SystemDrive", "windir", "ComSpec",
		"USERNAME", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA",
		"ProgramData", "ProgramFiles",
	)
)

// The lists above are this OS's list: a change to one is a change to the
// documented safe set and must show up here too.
func TestSafeEnvIsDocumentedList(t *testing.T) {
	want := unixSafeEnv
	if envFoldCase {
		want = windowsSafeEnv
	}
	if !slices.Equal(safeEnv, want) {
		t.Fatalf("safeEnv = %q\nwant %q (update the test and the documentation in env.go)", safeEnv, want)
	}
	for _, g := range append(slices.Clone(safeEnv), proxyEnv...) {
		if _, err := path.Match(g, ""); err != nil {
			t.Errorf("safe set entry %q: %v", g, err)
		}
	}
}

func TestEnvPolicyInherits(t *testing.T) {
	tests := []struct {
		name            string
		unix, windows   bool
		secret          bool // when inherited, only because the config asked
		passthroughOnly bool // inherited only with EnvPassthrough "AWS_*"
	}{
		{name: "PATH", unix: true, windows: true},
		{name: "Path", unix: false, windows: true},
		{name: "HOME", unix: true, windows: true},
		{name: "LANG", unix: true, windows: true},
		{name: "LC_ALL", unix: true, windows: true},
		{name: "LC_CTYPE", unix: true, windows: true},
		{name: "LC_", unix: true, windows: true},
		{name: "lc_all", unix: false, windows: true},
		{name: "LCX", unix: false, windows: false},
		{name: "XDG_CONFIG_HOME", unix: true, windows: true},
		{name: "XDG_RUNTIME_DIR", unix: true, windows: true},
		{name: "HTTPS_PROXY", unix: true, windows: true},
		{name: "https_proxy", unix: true, windows: true},
		{name: "Http_Proxy", unix: true, windows: true},
		{name: "no_proxy", unix: true, windows: true},
		{name: "ALL_PROXY", unix: true, windows: true},
		{name: "FTP_PROXY", unix: false, windows: false},
		{name: "NODE_EXTRA_CA_CERTS", unix: true, windows: true},
		{name: "node_extra_ca_certs", unix: false, windows: true},
		{name: "SSL_CERT_FILE", unix: true, windows: true},
		{name: "REQUESTS_CA_BUNDLE", unix: true, windows: true},
		{name: "TMPDIR", unix: true, windows: true},
		{name: "TZ", unix: true, windows: true},
		{name: "SYSTEMROOT", unix: false, windows: true},
		{name: "SystemRoot", unix: false, windows: true},
		{name: "COMSPEC", unix: false, windows: true},
		{name: "PATHEXT", unix: false, windows: true},
		{name: "APPDATA", unix: false, windows: true},
		{name: "ProgramFiles", unix: false, windows: true},
		{name: "PROGRAMDATA", unix: false, windows: true},
		{name: "WINDIR", unix: false, windows: true},
		{name: "GITHUB_TOKEN", unix: false, windows: false},
		{name: "SECRET_THING", unix: false, windows: false},
		{name: "MCPHUB_TOKEN", unix: false, windows: false},
		{name: "", unix: false, windows: false},
		{name: "AWS_REGION", passthroughOnly: true, secret: true},
		{name: "AWS_", passthroughOnly: true, secret: true},
	}
	for _, os := range []struct {
		name string
		safe []string
		fold bool
	}{{"unix", unixSafeEnv, false}, {"windows", windowsSafeEnv, true}} {
		t.Run(os.name, func(t *testing.T) {
			plain := envPolicy{safe: os.safe, foldCase: os.fold}
			pass := envPolicy{safe: os.safe, foldCase: os.fold, passthrough: []string{"AWS_*"}}
			for _, tt := range tests {
				want := tt.unix
				if os.fold {
					want = tt.windows
				}
				if got, secret := plain.inherits(tt.name); got != want || secret {
					t.Errorf("inherits(%q) = %v, %v; want %v, false", tt.name, got, secret, want)
				}
				got, secret := pass.inherits(tt.name)
				if want := want || tt.passthroughOnly; got != want || secret != tt.secret {
					t.Errorf("with passthrough AWS_*: inherits(%q) = %v, %v; want %v, %v", tt.name, got, secret, want, tt.secret)
				}
			}
		})
	}
}

func TestEnvPolicyPassthroughCase(t *testing.T) {
	unix := envPolicy{safe: unixSafeEnv, passthrough: []string{"AWS_*"}}
	if in, _ := unix.inherits("aws_region"); in {
		t.Error("on Unix a passthrough glob matched a name in another case")
	}
	windows := envPolicy{safe: windowsSafeEnv, foldCase: true, passthrough: []string{"AWS_*"}}
	if in, _ := windows.inherits("aws_region"); !in {
		t.Error("on Windows a passthrough glob did not match a name in another case")
	}
}

// EnvDeny holds back what a passthrough glob or InheritEnv would pass, in
// any case on every OS, but never the safe set: a server entry that refers
// to ${PATH} makes PATH one of the registry's secrets, and an inherit_env
// server must still get it.
func TestEnvPolicyDeny(t *testing.T) {
	for _, fold := range []bool{false, true} {
		p := envPolicy{
			safe: unixSafeEnv, foldCase: fold, inheritAll: true,
			passthrough: []string{"AWS_*"},
			deny:        []string{"MCPHUB_TOKEN", "AWS_SECRET_*", "HTTPS_PROXY", "LC_*", "PATH", "RANDOM_*"},
		}
		for name, want := range map[string]bool{
			"MCPHUB_TOKEN":          false,
			"mcphub_token":          false,
			"AWS_SECRET_ACCESS_KEY": false,
			"AWS_REGION":            true,
			"HTTPS_PROXY":           true,
			"https_proxy":           true,
			"HTTP_PROXY":            true,
			"LC_ALL":                true,
			"RANDOM_VAR":            false,
			"OTHER_VAR":             true,
			"PATH":                  true,
		} {
			if got, _ := p.inherits(name); got != want {
				t.Errorf("fold %v: inherits(%q) = %v, want %v", fold, name, got, want)
			}
		}
	}
}

func TestEnvPolicyBuild(t *testing.T) {
	hub := []string{
		"PATH=/usr/bin",
		"HOME=/home/a",
		"https_proxy=http://alice:pr0xy-pass@proxy:3128",
		"NODE_EXTRA_CA_CERTS=/etc/corp-ca.pem",
		"SECRET_THING=hunter2-hunter2",
		"AWS_REGION=eu-west-1",
		"AWS_SECRET_ACCESS_KEY=aws-secret-value",
		"MCPHUB_TOKEN=hub-token-value",
		"RANDOM_VAR=random-value",
		"=C:=C:\\work",
		"MALFORMED",
		"",
	}
	tests := []struct {
		name        string
		p           envPolicy
		extra       map[string]string
		want        []string
		wantSecrets []string
	}{{
		name: "safe set only",
		p:    envPolicy{safe: unixSafeEnv},
		want: []string{"PATH=/usr/bin", "HOME=/home/a", "https_proxy=http://alice:pr0xy-pass@proxy:3128", "NODE_EXTRA_CA_CERTS=/etc/corp-ca.pem"},
		// A proxy's password is a secret even in the safe set.
		wantSecrets: []string{"pr0xy-pass"},
	}, {
		name:        "passthrough glob",
		p:           envPolicy{safe: unixSafeEnv, passthrough: []string{"AWS_*"}, deny: []string{"AWS_SECRET_*"}},
		want:        []string{"PATH=/usr/bin", "HOME=/home/a", "https_proxy=http://alice:pr0xy-pass@proxy:3128", "NODE_EXTRA_CA_CERTS=/etc/corp-ca.pem", "AWS_REGION=eu-west-1"},
		wantSecrets: []string{"pr0xy-pass", "eu-west-1"},
	}, {
		name:  "inherit all but denied",
		p:     envPolicy{safe: unixSafeEnv, inheritAll: true, deny: []string{"MCPHUB_TOKEN", "=*"}},
		extra: map[string]string{"Z": "z", "A": "a"},
		want: []string{"PATH=/usr/bin", "HOME=/home/a", "https_proxy=http://alice:pr0xy-pass@proxy:3128", "NODE_EXTRA_CA_CERTS=/etc/corp-ca.pem",
			"SECRET_THING=hunter2-hunter2", "AWS_REGION=eu-west-1", "AWS_SECRET_ACCESS_KEY=aws-secret-value", "RANDOM_VAR=random-value", "A=a", "Z=z"},
		wantSecrets: []string{"pr0xy-pass", "hunter2-hunter2", "eu-west-1", "aws-secret-value", "random-value"},
	}, {
		name: "registry env wins and is never denied",
		p:    envPolicy{safe: unixSafeEnv, deny: []string{"PATH", "HTTPS_PROXY"}},
		extra: map[string]string{
			"PATH":        "/registry/bin",
			"HTTPS_PROXY": "http://registry-proxy:8080",
		},
		// The registry's HTTPS_PROXY replaces the inherited https_proxy:
		// proxy variables compare in any case, as tools read them.
		want: []string{"HOME=/home/a", "NODE_EXTRA_CA_CERTS=/etc/corp-ca.pem", "HTTPS_PROXY=http://registry-proxy:8080", "PATH=/registry/bin"},
	}, {
		name:  "registry env wins in any case on Windows",
		p:     envPolicy{safe: windowsSafeEnv, foldCase: true},
		extra: map[string]string{"Path": `C:\registry`, "HTTPS_PROXY": "http://registry-proxy:8080"},
		want:  []string{"HOME=/home/a", "NODE_EXTRA_CA_CERTS=/etc/corp-ca.pem", "HTTPS_PROXY=http://registry-proxy:8080", `Path=C:\registry`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, secrets := tt.p.build(hub, tt.extra)
			if !slices.Equal(env, tt.want) {
				t.Errorf("env =\n%q\nwant\n%q", env, tt.want)
			}
			if !slices.Equal(secrets, tt.wantSecrets) {
				t.Errorf("secrets = %q, want %q", secrets, tt.wantSecrets)
			}
		})
	}
}

func TestChildEnvRejectsBadPattern(t *testing.T) {
	for _, cfg := range []Config{
		{EnvPassthrough: []string{"AWS_["}},
		{EnvDeny: []string{"OK", `TOKEN\`}},
	} {
		_, _, err := childEnv(&cfg, []string{"PATH=/bin"})
		if !errors.Is(err, path.ErrBadPattern) {
			t.Errorf("childEnv(%+v) = %v, want path.ErrBadPattern", cfg, err)
		}
	}
	cfg := Config{EnvPassthrough: []string{"AWS_*", "[A-C]X"}, EnvDeny: []string{"MCPHUB_*"}}
	if _, _, err := childEnv(&cfg, nil); err != nil {
		t.Errorf("good patterns refused: %v", err)
	}
}

func TestSplitEnv(t *testing.T) {
	tests := []struct {
		kv, name, value string
		ok              bool
	}{
		{"PATH=/bin", "PATH", "/bin", true},
		{"A=", "A", "", true},
		{"A=b=c", "A", "b=c", true},
		{`=C:=C:\work`, "=C:", `C:\work`, true},
		{"NOVALUE", "", "", false},
		{"=", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		name, value, ok := splitEnv(tt.kv)
		if name != tt.name || value != tt.value || ok != tt.ok {
			t.Errorf("splitEnv(%q) = %q, %q, %v; want %q, %q, %v", tt.kv, name, value, ok, tt.name, tt.value, tt.ok)
		}
	}
}

// FuzzChildEnv checks what holds for any environment and any patterns: the
// registry's variables are passed as given, nothing denied is inherited,
// and everything passed comes from one of the two.
func FuzzChildEnv(f *testing.F) {
	f.Add("PATH=/bin\nMCPHUB_TOKEN=t\nAWS_REGION=x", "AWS_*", "MCPHUB_*", false, "K", "v")
	f.Add("=C:=C:\\w\nhttps_proxy=http://u:p@h\nLC_ALL=C", "[", "", true, "PATH", "/reg")
	f.Add("A=b=c\n\nNOEQ", "*", "A", true, "", "")
	f.Fuzz(func(t *testing.T, hubText, pass, deny string, all bool, key, value string) {
		hub := strings.Split(hubText, "\n")
		cfg := Config{InheritEnv: all, EnvPassthrough: []string{pass}, EnvDeny: []string{deny}}
		if key != "" && !strings.ContainsAny(key, "=\x00") {
			cfg.Env = map[string]string{key: value}
		}
		env, _, err := childEnv(&cfg, hub)
		if err != nil {
			if !errors.Is(err, path.ErrBadPattern) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		for k, v := range cfg.Env {
			if !slices.Contains(env, k+"="+v) {
				t.Fatalf("registry variable %s missing from %q", k, env)
			}
		}
		for _, kv := range env {
			name, _, ok := splitEnv(kv)
			if !ok {
				t.Fatalf("malformed entry %q", kv)
			}
			if _, given := cfg.Env[name]; given && kv == name+"="+cfg.Env[name] {
				continue
			}
			if !slices.Contains(hub, kv) {
				t.Fatalf("entry %q comes from neither environment", kv)
			}
			if p, _ := policyFor(&cfg); matchAny(cfg.EnvDeny, name, true) && !p.inSafeSet(name) {
				t.Fatalf("denied %q was inherited", name)
			}
		}
	})
}

// A proxy's password is found with or without a scheme: curl takes
// "user:pass@proxy:3128" as well.
func TestURLCredential(t *testing.T) {
	for in, want := range map[string]string{
		"http://alice:pr0xy@proxy:3128": "pr0xy",
		"alice:s3cret@proxy:3128":       "s3cret",
		"http://proxy:3128":             "",
		"alice@proxy:3128":              "alice",
		"http://tok3n@proxy:8080":       "tok3n",
		"http://%zz@proxy":              "http://%zz@proxy",
		"no-at-sign":                    "",
	} {
		if got := URLCredential(in); got != want {
			t.Errorf("URLCredential(%q) = %q, want %q", in, got, want)
		}
	}
}
