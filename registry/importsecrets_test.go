package registry

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSecretEnvKey(t *testing.T) {
	for key, want := range map[string]bool{
		"GITHUB_TOKEN": true, "GITHUB_PERSONAL_ACCESS_TOKEN": true, "github_token": true, "githubToken": true,
		"API_KEY": true, "apiKey": true, "OpenAIAPIKey": true, "APIKEY": true, "X-API-KEY": true,
		"CLIENT_SECRET": true, "DB_PASSWORD": true, "PGPASSWORD": false, "PG_PASS": true, "MYSQL_PWD": true,
		"GOOGLE_APPLICATION_CREDENTIALS": true, "AWS_CREDENTIALS": true, "CREDENTIAL": true, "AUTH": true,
		"SLACK_BOT_TOKEN": true, "TOKEN2": true, "GITHUB_PAT": true, "SECRET_ACCESS_KEY": true,
		"KEYBOARD": false, "MONKEY": false, "PASSPORT": false, "AUTHOR": false, "BYPASS": false,
		"PORT": false, "HOME": false, "PATH": false, "LOG_LEVEL": false, "TOKENIZER": false,
		"GITHUB_TOKEN_FILE": false, "AUTH_URL": false, "API_KEY_HEADER": false, "AUTH_TYPE": false,
		"AWS_ACCESS_KEY_ID": false, "SSH_KEY_PATH": false, "AUTH_ENABLED": false, "": false, "_": false,
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
	res, err := ImportClientConfigWith([]byte(data), ImportOptions{LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ServerSpec{}
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
	if err := AddServer(path, got["github-c"], false); err != nil {
		t.Fatal(err)
	}
	t.Setenv("API_KEY", "same-as-env")
	t.Setenv("DB_PASSWORD", "pa$word")
	reg, err := Load(path)
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
	res, err := ImportClientConfigWith([]byte(data), ImportOptions{KeepSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Secrets) != 0 || res.Specs[0].Env["GITHUB_TOKEN"] != "ghp_1" || res.Specs[1].Headers["Authorization"] != "Bearer sk-lin" {
		t.Errorf("KeepSecrets changed the values: %+v %+v", res.Specs, res.Secrets)
	}
	specs, _, _ := ImportClientConfig([]byte(data))
	if specs[0].Env["GITHUB_TOKEN"] != "ghp_1" {
		t.Errorf("ImportClientConfig must keep literal secrets as before")
	}
}
