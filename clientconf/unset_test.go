package clientconf

import (
	"reflect"
	"testing"
)

// TestDisableUnset: a server that needs a variable the hub lacks is
// disabled; one whose replaced secret this shell holds is only reported.
func TestDisableUnset(t *testing.T) {
	data := []byte(`{"mcpServers": {
	  "a": {"command": "x", "env": {"TOKEN": "${A_TOKEN}"}},
	  "b": {"command": "y", "env": {"API_KEY": "literal-1"}},
	  "c": {"command": "z", "env": {"GITHUB_TOKEN": "ghp_same"}},
	  "d": {"command": "w"}
	}}`)
	res, err := Import(data, ImportOptions{LookupEnv: envOf("GITHUB_TOKEN", "ghp_same")})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Vars(), []string{"API_KEY", "A_TOKEN", "GITHUB_TOKEN"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Vars() = %v, want %v", got, want)
	}
	got := res.DisableUnset([]string{"A_TOKEN", "GITHUB_TOKEN"})
	want := []UnsetVars{
		{Server: "a", Missing: []string{"A_TOKEN"}, Disabled: true},
		{Server: "b", Moved: []string{"API_KEY"}, Disabled: true},
		{Server: "c", Unsure: []string{"GITHUB_TOKEN"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DisableUnset = %+v, want %+v", got, want)
	}
	for _, s := range res.Specs {
		if s.Disabled != (s.Name == "a" || s.Name == "b") {
			t.Errorf("%s: disabled = %v", s.Name, s.Disabled)
		}
	}
}
