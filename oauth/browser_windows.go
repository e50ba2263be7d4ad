package oauth

import (
	"os/exec"
)

// osOpener is the command that opens a URL in the default browser; url.dll
// takes the URL as it is, where cmd's start would read & in it.
func osOpener(url string) *exec.Cmd {
	return exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
}
