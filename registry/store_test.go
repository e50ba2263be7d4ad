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

func TestReplicasKey(t *testing.T) {
	reg := mustParse(t, "[servers.a]\ncommand = \"x\"\nreplicas = \"one\"\n[servers.b]\ncommand = \"y\"\n", envOf())
	if reg.Server("a").Replicas != ReplicasOne || reg.Server("b").Replicas != ReplicasEach {
		t.Errorf("replicas = %q, %q; want one, each", reg.Server("a").Replicas, reg.Server("b").Replicas)
	}
	other := mustParse(t, "[servers.a]\ncommand = \"x\"\n", envOf())
	if reg.Server("a").Hash() == other.Server("a").Hash() {
		t.Error("replicas does not change the server's hash: a change would not restart it")
	}
	for text, want := range map[string]string{
		"[servers.a]\ncommand = \"x\"\nreplicas = \"two\"\n":                 "is not a replicas mode",
		"[servers.a]\nurl = \"https://h.example/mcp\"\nreplicas = \"one\"\n": "replicas applies only to stdio servers",
	} {
		if msg := parseErrors(t, text, envOf()).Error(); !strings.Contains(msg, want) {
			t.Errorf("%q: %s; want %q", text, msg, want)
		}
	}
}
