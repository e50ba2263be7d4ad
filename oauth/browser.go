package oauth

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// openBrowser opens url in the user's browser: the programs $BROWSER names
// (a list separated by the OS's path list separator, as xdg-utils reads
// it; "%s" in one stands for the URL) are tried first, then the OS's own
// opener. It does not wait for the browser.
func openBrowser(url string) error {
	if b := os.Getenv("BROWSER"); b != "" {
		var errs []error
		for _, cmdline := range strings.Split(b, string(os.PathListSeparator)) {
			fields := strings.Fields(cmdline)
			if len(fields) == 0 {
				continue
			}
			args, replaced := fields[1:], false
			for i, a := range args {
				if strings.Contains(a, "%s") {
					args[i], replaced = strings.ReplaceAll(a, "%s", url), true
				}
			}
			if !replaced {
				args = append(args, url)
			}
			if err := startDetached(exec.Command(fields[0], args...)); err != nil {
				errs = append(errs, err)
				continue
			}
			return nil
		}
		return fmt.Errorf("$BROWSER: %w", errors.Join(errs...))
	}
	return startDetached(osOpener(url))
}

// startDetached starts a program and reaps it when it exits, without
// waiting for it; its output is discarded.
func startDetached(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
