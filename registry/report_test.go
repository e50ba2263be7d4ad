package registry

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestValidateAndWriteText: a valid file is summed up; a file with
// problems lists each with its position, and WriteText prints them and
// says the fix in one sentence.
func TestValidateAndWriteText(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte("[servers.a]\ncommand = \"a\"\n\n[servers.b]\ncommand = \"b\"\nenabled = false\n\n[profiles.web]\ninclude = [\"a\"]\n"), 0o600)
	v, err := Validate(good)
	if err != nil || !v.Valid || v.Servers != 2 || v.Enabled != 1 || v.Profiles != 1 || v.Problems == nil {
		t.Fatalf("Validate(good) = %+v, %v", v, err)
	}
	if want := good + " is valid: 2 servers (1 enabled), 1 profile"; v.Summary() != want {
		t.Errorf("summary = %q, want %q", v.Summary(), want)
	}

	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[hub]\nauth = \"maybe\"\n"), 0o600)
	v, err = Validate(bad)
	var errs Errors
	if !errors.As(err, &errs) || v.Valid || len(v.Problems) != len(errs) || v.Problems[0].Key != "hub.auth" || v.Error != bad+" has 1 problem" {
		t.Fatalf("Validate(bad) = %+v, %v", v, err)
	}
	var out bytes.Buffer
	why := errs.WriteText(&out)
	if out.String() != errs[0].Error()+"\n" || why != "the registry has 1 problem; fix it and run the command again: "+errs[0].Error() {
		t.Errorf("WriteText printed %q and said %q", out.String(), why)
	}

	if v, err := Validate(filepath.Join(dir, "none.toml")); !errors.Is(err, fs.ErrNotExist) || v.Valid || v.Error != "" {
		t.Errorf("a missing file: %v", err)
	}
}

// TestLoadExisting creates nothing and says nothing when there is no
// file.
func TestLoadExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.toml")
	if reg, err := LoadExisting(path); reg != nil || err != nil {
		t.Errorf("LoadExisting(none) = %v, %v", reg, err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("LoadExisting created the file")
	}
}
