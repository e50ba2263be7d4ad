package registry

import (
	"path/filepath"
	"testing"
)

// TestDataDirOnWindows: Windows keeps the data in %LocalAppData%\mcphub and
// the registry in %AppData%\mcphub.
func TestDataDirOnWindows(t *testing.T) {
	t.Setenv("MCPHUB_DATA", "")
	t.Setenv("MCPHUB_CONFIG", "")
	t.Setenv("LocalAppData", `C:\Users\u\AppData\Local`)
	t.Setenv("AppData", `C:\Users\u\AppData\Roaming`)
	if got, want := DefaultDataDir(), filepath.Join(`C:\Users\u\AppData\Local`, "mcphub"); got != want {
		t.Errorf("DefaultDataDir = %q, want %q", got, want)
	}
	if got, want := DefaultPath(), filepath.Join(`C:\Users\u\AppData\Roaming`, "mcphub", "hub.toml"); got != want {
		t.Errorf("DefaultPath = %q, want %q", got, want)
	}
}
