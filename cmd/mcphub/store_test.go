package main

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/store"
	"github.com/mcphub/mcphub/store/pgtest"
)

// closedPGURL is a PostgreSQL URL, with a password, on a loopback port
// nothing listens on.
func closedPGURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "postgres://team:Hunter2-pw@" + addr + "/mcphub?sslmode=disable"
}

// A store that cannot be reached stops serve at once: the URL, password
// masked, and the reason; never a hub that serves without its store.
func TestServeRefusesUnreachableStore(t *testing.T) {
	h := newProcHub(t)
	h.write(t, h.registry(""))
	raw := closedPGURL(t)
	for name, how := range map[string]struct {
		flags []string
		env   []string
	}{
		"flag": {flags: []string{"--store", raw}},
		"env":  {env: []string{"MCPHUB_STORE=" + raw}},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := h.cli(t, how.env, append([]string{"serve"}, how.flags...)...)
			if code == 0 {
				t.Fatalf("serve with an unreachable store exited 0; stdout %q", stdout)
			}
			for _, want := range []string{"cannot reach postgres://team:xxxxx@127.0.0.1:", "refused"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stdout+stderr, "Hunter2") {
				t.Errorf("the password reached the output:\n%s%s", stdout, stderr)
			}
			if strings.Contains(stdout, "serving") {
				t.Errorf("serve started serving: %s", stdout)
			}
		})
	}
}

// store check reports each state of a store, in text and JSON, without
// changing it, and exits 1 for a store serve could not use.
func TestStoreCheck(t *testing.T) {
	h := newProcHub(t)
	u := pgtest.URL(t)
	h.write(t, h.registry("")+"\n[store]\nurl = \"${TEAM_DB}\"\n")
	check := func(env []string, args ...string) (int, storeCheckResult, string) {
		t.Helper()
		code, stdout, stderr := h.cli(t, env, append([]string{"store", "check", "--json"}, args...)...)
		var r storeCheckResult
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("store check --json printed %q (stderr %q): %v", stdout, stderr, err)
		}
		return code, r, stderr
	}
	env := []string{"TEAM_DB=" + u}
	code, r, _ := check(env)
	if code != 0 || r.State != "new" || r.Dialect != "postgres" || !strings.Contains(r.From, "[store] url") || r.Exists {
		t.Errorf("before serve: exit %d, %+v; want a new PostgreSQL store from hub.toml", code, r)
	}
	db, err := store.OpenURL(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if code, r, _ = check(env); code != 0 || r.State != "current" || r.SchemaVersion != store.Migrations() || !r.Reachable {
		t.Errorf("after a migration: exit %d, %+v; want current", code, r)
	}
	// MCPHUB_STORE wins over hub.toml, and --store over both.
	bad := closedPGURL(t)
	if code, r, _ = check(append(env, "MCPHUB_STORE="+bad)); code != 1 || r.State != "unreachable" || r.From != "MCPHUB_STORE" {
		t.Errorf("MCPHUB_STORE unreachable: exit %d, %+v", code, r)
	}
	if strings.Contains(r.Error+r.Where, "Hunter2") {
		t.Errorf("the report shows the password: %+v", r)
	}
	if code, r, _ = check(append(env, "MCPHUB_STORE="+bad), "--store", u); code != 0 || r.From != "--store" {
		t.Errorf("--store over MCPHUB_STORE: exit %d, %+v", code, r)
	}
	// Without any URL, SQLite in the data directory.
	h.write(t, h.registry(""))
	if code, r, _ = check(nil); code != 0 || r.Dialect != "sqlite" || r.State != "new" {
		t.Errorf("no URL: exit %d, %+v; want a new SQLite store", code, r)
	}
	// A URL of another kind is refused without being echoed.
	code, stdout, stderr := h.cli(t, []string{"MCPHUB_STORE=mysql://u:Hunter2-pw@h/db"}, "store", "check")
	if code == 0 || !strings.Contains(stderr, "MCPHUB_STORE is not a PostgreSQL URL") || strings.Contains(stdout+stderr, "Hunter2") {
		t.Errorf("mysql URL: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
