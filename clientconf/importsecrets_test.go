package clientconf

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/registry"
)

func TestSecretEnvKey(t *testing.T) {
	for key, want := range map[string]bool{
		"GITHUB_TOKEN": true, "GITHUB_PERSONAL_ACCESS_TOKEN": true, "github_token": true, "githubToken": true,
		"API_KEY": true, "apiKey": true, "OpenAIAPIKey": true, "APIKEY": true, "X-API-KEY": true,
		"CLIENT_SECRET": true, "DB_PASSWORD": true, "PGPASSWORD": true, "PG_PASS": true, "MYSQL_PWD": true,
		"DBPASS": true, "SMTP_PASSWD": true, "redisPassword": true, "ID_TOKEN": true,
		"GOOGLE_APPLICATION_CREDENTIALS": true, "AWS_CREDENTIALS": true, "CREDENTIAL": true, "AUTH": true,
		"SLACK_BOT_TOKEN": true, "TOKEN2": true, "GITHUB_PAT": true, "SECRET_ACCESS_KEY": true,
		"KEYBOARD": false, "MONKEY": false, "PASSPORT": false, "AUTHOR": false, "BYPASS": false,
		"PORT": false, "HOME": false, "PATH": false, "LOG_LEVEL": false, "TOKENIZER": false,
		"GITHUB_TOKEN_FILE": false, "AUTH_URL": false, "API_KEY_HEADER": false, "AUTH_TYPE": false,
		"AWS_ACCESS_KEY_ID": false, "SSH_KEY_PATH": false, "AUTH_ENABLED": false, "": false, "_": false,
		"MAX_TOKENS": false, "maxTokens": false, "TOKEN_LIMIT": false, "MIN_TOKENS": false, "TOKEN_COUNT": false,
		"NUM_KEYS": false, "KEY_SIZE": false, "API_KEY_PREFIX": false, "AUTH_STRATEGY": false, "AUTH_MODE": false,
		"TOKEN_TYPE_HINT": false, "TOKEN_ID": false, "SECRET_ID": false, "PRIMARY_KEY": false, "SORT_KEY": false,
		"PWD": false, "OLDPWD": false, "pwd": false, "COMPASS": false,
	} {
		if got := secretEnvKey(key); got != want {
			t.Errorf("secretEnvKey(%q) = %v, want %v (words %q)", key, got, want, keyWords(key))
		}
	}
}

func TestSecretHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "authorization": true, "Proxy-Authorization": true, "X-API-Key": true,
		"X-Auth-Token": true, "X-Goog-Api-Key": true, "Api-Secret": true,
		"Accept": false, "X-Request-Id": false, "User-Agent": false, "X-Tenant": false,
	} {
		if got := secretHeader(name); got != want {
			t.Errorf("secretHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSplitScheme(t *testing.T) {
	for in, want := range map[string][2]string{
		"Bearer sk-abc":  {"Bearer ", "sk-abc"},
		"bearer  sk-abc": {"bearer  ", "sk-abc"},
		"Basic dXNlcg==": {"Basic ", "dXNlcg=="},
		"token ghp_1":    {"token ", "ghp_1"},
		"sk-abc":         {"", "sk-abc"},
		"Digest x y":     {"", "Digest x y"},
	} {
		if p, c := splitScheme(in); p != want[0] || c != want[1] {
			t.Errorf("splitScheme(%q) = %q, %q; want %q", in, p, c, want)
		}
	}
}

func TestImportReplacesLiteralSecrets(t *testing.T) {
	data := `{"mcpServers": {
	  "github": {"command": "npx", "env": {"GITHUB_TOKEN": "ghp_one", "KEYBOARD": "us", "PORT": "3000", "DEBUG": "true", "REF_TOKEN": "${OTHER}"}},
	  "github-b": {"command": "npx", "env": {"GITHUB_TOKEN": "ghp_two", "github-token": "ghp_three"}},
	  "github-c": {"command": "npx", "env": {"GITHUB_TOKEN": "ghp_one", "API_KEY": "same-as-env", "DB_PASSWORD": "pa$word"}},
	  "linear": {"url": "https://mcp.linear.app/mcp", "headers": {"Authorization": "Bearer sk-lin", "X-API-Key": "k-1", "Accept": "text/plain", "X-Auth-Token": "Bearer ${LINEAR_T}"}},
	  "proxy": {"url": "https://p.example/mcp", "headers": {"Proxy-Authorization": "Basic dXNlcjpw", "authorization": "bearer  sk-p", "X-Token": "Bearer "}}
	}}`
	env := envOf("API_KEY", "same-as-env", "DB_PASSWORD", "something else")
	res, err := Import([]byte(data), ImportOptions{LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]registry.ServerSpec{}
	for _, s := range res.Specs {
		got[s.Name] = s
	}
	wantEnv := map[string]map[string]string{
		"github":   {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "KEYBOARD": "us", "PORT": "3000", "DEBUG": "true", "REF_TOKEN": "${OTHER}"},
		"github-b": {"GITHUB_TOKEN": "${GITHUB_TOKEN_2}", "github-token": "${GITHUB_TOKEN_3}"},
		"github-c": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "API_KEY": "${API_KEY}", "DB_PASSWORD": "${DB_PASSWORD}"},
	}
	for name, want := range wantEnv {
		if !reflect.DeepEqual(got[name].Env, want) {
			t.Errorf("%s env = %v, want %v", name, got[name].Env, want)
		}
	}
	wantHeaders := map[string]map[string]string{
		"linear": {"Authorization": "Bearer ${LINEAR_TOKEN}", "X-API-Key": "${LINEAR_API_KEY}", "Accept": "text/plain", "X-Auth-Token": "Bearer ${LINEAR_T}"},
		"proxy":  {"Proxy-Authorization": "Basic ${PROXY_PROXY_TOKEN}", "authorization": "bearer  ${PROXY_TOKEN}", "X-Token": "Bearer "},
	}
	for name, want := range wantHeaders {
		if !reflect.DeepEqual(got[name].Headers, want) {
			t.Errorf("%s headers = %v, want %v", name, got[name].Headers, want)
		}
	}
	wantSecrets := []ImportedSecret{
		{Var: "API_KEY", Where: "servers.github-c.env.API_KEY", Servers: []string{"github-c"}, Env: SecretSame},
		{Var: "DB_PASSWORD", Where: "servers.github-c.env.DB_PASSWORD", Servers: []string{"github-c"}, Env: SecretDifferent},
		{Var: "GITHUB_TOKEN", Where: "servers.github.env.GITHUB_TOKEN", Servers: []string{"github", "github-c"}},
		{Var: "GITHUB_TOKEN_2", Where: "servers.github-b.env.GITHUB_TOKEN", Servers: []string{"github-b"}},
		{Var: "GITHUB_TOKEN_3", Where: `servers.github-b.env.github-token`, Servers: []string{"github-b"}},
		{Var: "LINEAR_API_KEY", Where: "servers.linear.headers.X-API-Key", Servers: []string{"linear"}},
		{Var: "LINEAR_TOKEN", Where: "servers.linear.headers.Authorization", Servers: []string{"linear"}},
		{Var: "PROXY_PROXY_TOKEN", Where: "servers.proxy.headers.Proxy-Authorization", Servers: []string{"proxy"}},
		{Var: "PROXY_TOKEN", Where: "servers.proxy.headers.authorization", Servers: []string{"proxy"}},
	}
	if !reflect.DeepEqual(res.Secrets, wantSecrets) {
		t.Errorf("secrets\n got %+v\nwant %+v", res.Secrets, wantSecrets)
	}
	all := strings.Join(res.Notes, "\n") + stringsOf(res.Secrets)
	for _, v := range []string{"ghp_one", "ghp_two", "ghp_three", "same-as-env", "pa$word", "sk-lin", "k-1", "dXNlcjpw", "sk-p"} {
		if strings.Contains(all, v) {
			t.Errorf("a secret value %q appears in the notes or secrets: %s", v, all)
		}
	}

	// The replaced entries are what the registry takes, and read the
	// values back from the environment.
	t.Setenv("GITHUB_TOKEN", "ghp_one")
	path := filepath.Join(t.TempDir(), "hub.toml")
	if err := registry.AddServer(path, got["github-c"], false); err != nil {
		t.Fatal(err)
	}
	t.Setenv("API_KEY", "same-as-env")
	t.Setenv("DB_PASSWORD", "pa$word")
	reg, err := registry.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if e := reg.Server("github-c").Env; e["GITHUB_TOKEN"] != "ghp_one" || e["DB_PASSWORD"] != "pa$word" {
		t.Errorf("the registry does not expand the replaced secrets back")
	}
}

func stringsOf(secrets []ImportedSecret) string {
	var b strings.Builder
	for _, s := range secrets {
		b.WriteString(s.Var + s.Where + strings.Join(s.Servers, ","))
	}
	return b.String()
}

func TestImportKeepSecrets(t *testing.T) {
	data := `{"mcpServers": {"linear": {"url": "https://l.example/mcp", "headers": {"Authorization": "Bearer sk-lin"}},
	  "gh": {"command": "x", "env": {"GITHUB_TOKEN": "ghp_1"}}}}`
	res, err := Import([]byte(data), ImportOptions{KeepSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Secrets) != 0 || res.Specs[0].Env["GITHUB_TOKEN"] != "ghp_1" || res.Specs[1].Headers["Authorization"] != "Bearer sk-lin" {
		t.Errorf("KeepSecrets changed the values: %+v %+v", res.Specs, res.Secrets)
	}
	specs, _, _ := importKeeping([]byte(data))
	if specs[0].Env["GITHUB_TOKEN"] != "ghp_1" {
		t.Errorf("KeepSecrets must keep literal secrets as before")
	}
}

func TestLiteralValueSkipsPlainValues(t *testing.T) {
	for v, want := range map[string]bool{
		"4096": false, "0": false, "-1": false, "3.5": false, " 42 ": false, "true": false, "": false,
		"sk-4096": true, "1e9x": true, "12ab": true, "1.2.3": true, "${X}": false, "$${X}": false,
	} {
		if _, got := literalValue(v); got != want {
			t.Errorf("literalValue(%q) ok = %v, want %v", v, got, want)
		}
	}
}

// TestImportSecretNamesAvoidTakenVars: a literal never takes a name that
// another entry of the file, or the registry, refers to already, unless the
// environment holds that very literal under it.
func TestImportSecretNamesAvoidTakenVars(t *testing.T) {
	data := `{"mcpServers": {
	  "a": {"command": "x", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
	  "b": {"command": "x", "env": {"GITHUB_TOKEN": "ghp_literal", "SLACK_TOKEN": "xoxb-1"}},
	  "c": {"url": "https://c.example/mcp", "headers": {"Authorization": "Bearer ${C_TOKEN}", "X-Api-Key": "k-c"}},
	  "d": {"url": "https://d.example/mcp", "headers": {"Authorization": "Bearer sk-d"}},
	  "e": {"command": "x", "env": {"C_API_KEY": "other-k"}}
	}}`
	res, err := Import([]byte(data), ImportOptions{TakenVars: []string{"SLACK_TOKEN", "D_TOKEN"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]registry.ServerSpec{}
	for _, s := range res.Specs {
		got[s.Name] = s
	}
	if e := got["b"].Env; e["GITHUB_TOKEN"] != "${GITHUB_TOKEN_2}" || e["SLACK_TOKEN"] != "${SLACK_TOKEN_2}" {
		t.Errorf("b env = %v, want GITHUB_TOKEN_2 and SLACK_TOKEN_2", e)
	}
	if h := got["d"].Headers["Authorization"]; h != "Bearer ${D_TOKEN_2}" {
		t.Errorf("d Authorization = %q, want Bearer ${D_TOKEN_2}", h)
	}
	if h := got["c"].Headers["X-Api-Key"]; h != "${C_API_KEY}" {
		t.Errorf("c X-Api-Key = %q", h)
	}
	if e := got["e"].Env["C_API_KEY"]; e != "${C_API_KEY_2}" {
		t.Errorf("e C_API_KEY = %q, want ${C_API_KEY_2}: c's key took C_API_KEY", e)
	}
	if got["a"].Env["GITHUB_TOKEN"] != "${GITHUB_TOKEN}" {
		t.Errorf("a env changed: %v", got["a"].Env)
	}

	// The environment holds the literal under the taken name: it is the
	// same value, so the literal reads that name.
	res, err = Import([]byte(data), ImportOptions{TakenVars: []string{"SLACK_TOKEN"},
		LookupEnv: envOf("GITHUB_TOKEN", "ghp_literal", "SLACK_TOKEN", "xoxb-other")})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Specs {
		if s.Name == "b" && (s.Env["GITHUB_TOKEN"] != "${GITHUB_TOKEN}" || s.Env["SLACK_TOKEN"] != "${SLACK_TOKEN_2}") {
			t.Errorf("b env = %v, want GITHUB_TOKEN reused and SLACK_TOKEN_2", s.Env)
		}
	}
	var gh *ImportedSecret
	for i := range res.Secrets {
		if res.Secrets[i].Var == "GITHUB_TOKEN" {
			gh = &res.Secrets[i]
		}
	}
	if gh == nil || gh.Env != SecretSame || !reflect.DeepEqual(gh.Servers, []string{"b"}) {
		t.Errorf("GITHUB_TOKEN secret = %+v, want b's, the same as the environment", gh)
	}
}

// TestImportSecretDetection: numbers and settings about secrets stay as
// they are; PGPASSWORD moves; a URL's password in env moves alone; one in
// args or url gets a note.
func TestImportSecretDetection(t *testing.T) {
	data := `{"mcpServers": {
	  "llm": {"command": "x", "env": {"MAX_TOKENS": "4096", "TOKEN_LIMIT": "lots", "PRIMARY_KEY": "id", "PWD": "/srv",
	    "API_KEY": 12345, "OPENAI_API_KEY": "sk-1", "KEY_PREFIX": "mcp_"}},
	  "pg": {"command": "pg-mcp", "args": ["--dsn", "postgres://admin:arg-pw@db/app"],
	    "env": {"PGPASSWORD": "pgpw", "DATABASE_URL": "postgres://app:p%40ss$w0rd@db:5432/app?sslmode=require", "MIRROR": "https://u:@m.example/x", "PLAIN_URL": "https://db.example/x", "CACHE": "redis://:r3d1s@cache:6379/0"}},
	  "web": {"url": "https://bob:url-pw@w.example/mcp"}
	}}`
	res, err := Import([]byte(data), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]registry.ServerSpec{}
	for _, s := range res.Specs {
		got[s.Name] = s
	}
	wantEnv := map[string]map[string]string{
		"llm": {"MAX_TOKENS": "4096", "TOKEN_LIMIT": "lots", "PRIMARY_KEY": "id", "PWD": "/srv",
			"API_KEY": "12345", "OPENAI_API_KEY": "${OPENAI_API_KEY}", "KEY_PREFIX": "mcp_"},
		"pg": {"PGPASSWORD": "${PGPASSWORD}", "DATABASE_URL": "postgres://app:${DATABASE_PASSWORD}@db:5432/app?sslmode=require",
			"MIRROR": "https://u:@m.example/x", "PLAIN_URL": "https://db.example/x", "CACHE": "redis://:${CACHE_PASSWORD}@cache:6379/0"},
	}
	for name, want := range wantEnv {
		if !reflect.DeepEqual(got[name].Env, want) {
			t.Errorf("%s env\n got %v\nwant %v", name, got[name].Env, want)
		}
	}
	if got["pg"].Args[1] != "postgres://admin:arg-pw@db/app" || got["web"].URL != "https://bob:url-pw@w.example/mcp" {
		t.Errorf("args or url were rewritten: %q %q", got["pg"].Args, got["web"].URL)
	}
	assertNotes(t, res.Notes, `server "pg": args[1] is a URL with a password`, `server "web": url holds a password`)
	var vars []string
	for _, s := range res.Secrets {
		vars = append(vars, s.Var)
	}
	if want := []string{"CACHE_PASSWORD", "DATABASE_PASSWORD", "OPENAI_API_KEY", "PGPASSWORD"}; !reflect.DeepEqual(vars, want) {
		t.Errorf("secrets %v, want %v", vars, want)
	}
	for _, v := range []string{"arg-pw", "url-pw", "p%40ss", "pgpw", "r3d1s"} {
		if strings.Contains(strings.Join(res.Notes, "\n")+stringsOf(res.Secrets), v) {
			t.Errorf("a secret %q appears in the notes", v)
		}
	}

	// The registry reads the URL back whole from the variable.
	t.Setenv("DATABASE_PASSWORD", "p%40ss$w0rd")
	t.Setenv("PGPASSWORD", "pgpw")
	t.Setenv("CACHE_PASSWORD", "r3d1s")
	path := filepath.Join(t.TempDir(), "hub.toml")
	if err := registry.AddServer(path, got["pg"], false); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if u := reg.Server("pg").Env["DATABASE_URL"]; u != "postgres://app:p%40ss$w0rd@db:5432/app?sslmode=require" {
		t.Errorf("DATABASE_URL expands to %q", u)
	}
}
