package client

import (
	"os/exec"
	"strings"
)

// defaultPathext is the list of executable extensions Windows uses when
// PATHEXT is unset.
const defaultPathext = ".COM;.EXE;.BAT;.CMD"

// lookPathWindows finds the file Windows runs for the command name, given
// the PATH and PATHEXT values the child process will get and a test for a
// regular file. It is the lookup of the Windows command line, so that a
// registry entry written as "npx" runs npx.cmd:
//
//   - a name that holds a path (a separator or a drive letter) is used as it
//     is;
//   - a name is looked for with each PATHEXT extension in turn, in each
//     PATH directory in turn (".COM;.EXE;.BAT;.CMD" when PATHEXT is empty);
//     a name that holds a dot ("npx.cmd", "python3.11") is tried as it is
//     first in each directory.
//
// Unlike cmd.exe, and like exec.LookPath since Go 1.19, it never looks in the
// current directory, neither first nor through a relative PATH entry: a
// server must not run whatever file of that name happens to sit where mcphub
// was started. It is pure, so its table test runs on every OS; only the
// Windows build calls it.
func lookPathWindows(name, path, pathext string, isFile func(string) bool) (string, error) {
	if name == "" {
		return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
	}
	if strings.ContainsAny(name, `\/:`) {
		return name, nil
	}
	exts := splitPathext(pathext)
	if strings.Contains(name, ".") {
		// As exec.LookPath does: the name as written first, then with
		// each extension ("python3.11" -> "python3.11.exe").
		exts = append([]string{""}, exts...)
	}
	for _, dir := range splitWindowsPathList(path) {
		if !isWindowsAbs(dir) {
			continue
		}
		if !strings.HasSuffix(dir, `\`) && !strings.HasSuffix(dir, "/") {
			dir += `\`
		}
		for _, ext := range exts {
			if p := dir + name + ext; isFile(p) {
				return p, nil
			}
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// splitPathext splits a PATHEXT value into lower-case extensions that each
// start with a dot, skipping empty entries and ones that hold a path
// separator or a drive colon (which would name a file in another folder).
func splitPathext(pathext string) []string {
	if strings.TrimSpace(pathext) == "" {
		pathext = defaultPathext
	}
	var exts []string
	for _, e := range strings.Split(pathext, ";") {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" || strings.ContainsAny(e, `\/:`) {
			continue
		}
		if e[0] != '.' {
			e = "." + e
		}
		exts = append(exts, e)
	}
	return exts
}

// splitWindowsPathList splits a Windows PATH value at the semicolons outside
// double quotes, drops the quotes (an entry may be quoted because it holds a
// semicolon) and skips empty entries.
func splitWindowsPathList(path string) []string {
	var (
		dirs   []string
		cur    strings.Builder
		quoted bool
	)
	flush := func() {
		if cur.Len() > 0 {
			dirs = append(dirs, cur.String())
			cur.Reset()
		}
	}
	for _, r := range path {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ';' && !quoted:
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return dirs
}

// isWindowsAbs reports whether dir is an absolute Windows path: a drive
// letter followed by a separator, or a UNC path.
func isWindowsAbs(dir string) bool {
	if strings.HasPrefix(dir, `\\`) || strings.HasPrefix(dir, "//") {
		return true
	}
	return len(dir) >= 3 && isLetter(dir[0]) && dir[1] == ':' && (dir[2] == '\\' || dir[2] == '/')
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
