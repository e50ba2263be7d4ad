package client

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestLookPathWindows(t *testing.T) {
	files := map[string]bool{
		`C:\Program Files\nodejs\npx.cmd`:  true,
		`C:\Program Files\nodejs\node.exe`: true,
		`C:\tools\npx.exe`:                 true,
		`C:\tools\uvx.COM`:                 true,
		`C:\tools\server.py`:               true,
		`C:\tools\python3.11`:              true,
		`C:\tools\python3.12.exe`:          true,
		`D:\semi;colon\tool.bat`:           true,
		`\\host\share\bin\remote.exe`:      true,
		`C:\cwd\local.exe`:                 true,
		`C:\tools\dir.exe`:                 false, // a directory
	}
	// Like Windows: either slash, any case.
	isFile := func(p string) bool {
		for f, ok := range files {
			if ok && strings.EqualFold(strings.ReplaceAll(p, "/", `\`), f) {
				return true
			}
		}
		return false
	}
	const nodePath = `C:\Windows\system32;C:\Program Files\nodejs\`
	for _, tc := range []struct {
		name, path, pathext string
		want                string // "" means not found
	}{
		{"npx", nodePath, "", `C:\Program Files\nodejs\npx.cmd`},
		{"npx", nodePath, ".COM;.EXE;.BAT;.CMD", `C:\Program Files\nodejs\npx.cmd`},
		// PATHEXT order decides within a directory, PATH order across them.
		{"npx", `C:\tools;` + nodePath, "", `C:\tools\npx.exe`},
		{"npx", nodePath + `;C:\tools`, "", `C:\Program Files\nodejs\npx.cmd`},
		{"npx", `C:\tools`, ".CMD;.EXE", `C:\tools\npx.exe`},
		{"npx", `C:\tools`, ".CMD", ""},
		{"npx", nodePath, ".EXE", ""},
		// Extensions may lack the dot or carry spaces; case is Windows'.
		{"npx", nodePath, " cmd ;;", `C:\Program Files\nodejs\npx.cmd`},
		// An "extension" that names another folder is no extension.
		{"npx", `C:\tools`, `.x\..\..\nodejs\npx.cmd;.EXE`, `C:\tools\npx.exe`},
		{"uvx", `C:\tools`, ".COM", `C:\tools\uvx.com`},
		// An explicit extension is looked for as it is first.
		{"npx.cmd", nodePath, "", `C:\Program Files\nodejs\npx.cmd`},
		{"node.exe", nodePath, "", `C:\Program Files\nodejs\node.exe`},
		{"server.py", `C:\tools`, "", `C:\tools\server.py`},
		{"python3.11", `C:\tools`, "", `C:\tools\python3.11`},
		// A dotted name also gets each extension, as exec.LookPath gives it.
		{"python3.12", `C:\tools`, "", `C:\tools\python3.12.exe`},
		{"npx.exe", nodePath, "", ""},
		// Quoted entries, forward slashes, UNC paths.
		{"tool", `"D:\semi;colon";C:\tools`, "", `D:\semi;colon\tool.bat`},
		{"npx", `C:/Program Files/nodejs`, "", `C:/Program Files/nodejs\npx.cmd`},
		{"remote", `\\host\share\bin`, "", `\\host\share\bin\remote.exe`},
		// Relative entries are never searched: the current directory is not.
		{"local", `.;cwd;C:cwd`, "", ""},
		{"dir", `C:\tools`, "", ""},
		{"npx", "", "", ""},
		{"", nodePath, "", ""},
	} {
		got, err := lookPathWindows(tc.name, tc.path, tc.pathext, isFile)
		if tc.want == "" {
			var ee *exec.Error
			if err == nil || !errors.As(err, &ee) || !errors.Is(err, exec.ErrNotFound) || ee.Name != tc.name {
				t.Errorf("lookPathWindows(%q, %q, %q) = %q, %v; want an *exec.Error with ErrNotFound", tc.name, tc.path, tc.pathext, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("lookPathWindows(%q, %q, %q) = %q, %v; want %q", tc.name, tc.path, tc.pathext, got, err, tc.want)
		}
	}
}

// A name that is a path is used as it is, whether or not it exists.
func TestLookPathWindowsPathIsUsedAsIs(t *testing.T) {
	for _, name := range []string{`C:\x\npx`, `.\npx`, `bin/npx.cmd`, `C:npx`, `\\host\share\x.exe`} {
		got, err := lookPathWindows(name, `C:\tools`, "", func(string) bool { return false })
		if err != nil || got != name {
			t.Errorf("lookPathWindows(%q) = %q, %v; want it unchanged", name, got, err)
		}
	}
}

// Whatever PATH and PATHEXT hold, a found file is one isFile accepted, in an
// absolute directory, named after the command.
func FuzzLookPathWindows(f *testing.F) {
	f.Add("npx", `C:\a;"C:\b;c";\\h\s`, ".COM;.EXE;.BAT;.CMD")
	f.Add("npx.cmd", `;;C:/x/;rel`, "cmd")
	f.Add("a", `"`, ";")
	f.Fuzz(func(t *testing.T, name, path, pathext string) {
		var asked []string
		got, err := lookPathWindows(name, path, pathext, func(p string) bool {
			asked = append(asked, p)
			return len(asked)%3 == 0
		})
		if err != nil {
			if got != "" {
				t.Fatalf("error %v with a result %q", err, got)
			}
			return
		}
		if strings.ContainsAny(name, `\/:`) {
			if got != name {
				t.Fatalf("path %q resolved to %q", name, got)
			}
			return
		}
		if len(asked) == 0 || asked[len(asked)-1] != got {
			t.Fatalf("%q resolved to %q, which isFile was not last asked about (%q)", name, got, asked)
		}
		i := strings.LastIndexAny(got, `\/`)
		if i < 0 || !isWindowsAbs(got[:i+1]) && !isWindowsAbs(got) || !strings.HasPrefix(strings.ToLower(got[i+1:]), strings.ToLower(name)) {
			t.Fatalf("%q resolved to %q: not the name in an absolute directory", name, got)
		}
	})
}
