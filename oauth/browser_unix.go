//go:build !windows

package oauth

import (
	"os/exec"
	"runtime"
)

// osOpener is the command that opens a URL in the default browser: open
// on macOS, xdg-open elsewhere.
func osOpener(url string) *exec.Cmd {
	if runtime.GOOS == "darwin" {
		return exec.Command("open", url)
	}
	return exec.Command("xdg-open", url)
}
