package registry

import (
	"strings"
	"testing"
)

func TestStoreTable(t *testing.T) {
	reg := mustParse(t, "[store]\nurl = \"postgres://team:${PGPASS}@db:5432/mcphub\"\n", envOf())
	if reg.Store.URL != "postgres://team:${PGPASS}@db:5432/mcphub" {
		t.Errorf("Store.URL = %q, want it as written", reg.Store.URL)
	}
	got, err := reg.StoreURL(envOf("PGPASS", "s3cret"))
	if err != nil || got != "postgres://team:s3cret@db:5432/mcphub" {
		t.Errorf("StoreURL = %q, %v", got, err)
	}
	_, err = reg.StoreURL(envOf())
	if err == nil || !strings.Contains(err.Error(), "PGPASS") || !strings.Contains(err.Error(), "not set") {
		t.Errorf("StoreURL with PGPASS unset: %v, want it named", err)
	}
	if got, err := mustParse(t, "", envOf()).StoreURL(envOf()); got != "" || err != nil {
		t.Errorf("no [store]: StoreURL = %q, %v; want none", got, err)
	}
	whole := mustParse(t, "[store]\nurl = \"${MCPHUB_DB}\"\n", envOf())
	if got, err := whole.StoreURL(envOf("MCPHUB_DB", "postgresql://h/db")); got != "postgresql://h/db" || err != nil {
		t.Errorf("StoreURL of a whole reference = %q, %v", got, err)
	}
}

func TestStoreTableErrors(t *testing.T) {
	for text, want := range map[string]string{
		"[store]\nurl = \"mysql://u:hunter2@h/db\"\n": "hub.toml:2:1: store.url: is not a PostgreSQL URL",
		"[store]\nuri = \"postgres://h/db\"\n":        "uri",
		"store = \"postgres://h/db\"\n":               "store must be a table",
	} {
		errs := parseErrors(t, text, envOf())
		msg := errs.Error()
		if !strings.Contains(msg, want) {
			t.Errorf("%q: errors %q do not say %q", text, msg, want)
		}
		if strings.Contains(msg, "hunter2") {
			t.Errorf("%q: errors show the password: %s", text, msg)
		}
	}
}
