package clientconf

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// vscodeOnly are VS Code variables that have no value outside an editor.
var vscodeOnly = []string{"workspaceFolder", "workspaceFolderBasename", "workspaceRoot", "file",
	"fileDirname", "relativeFile", "cwd", "pathSeparator", "execPath", "defaultBuildTask"}

// vars rewrites a value's variable references into mcphub's ${VAR} form.
func (im *importer) vars(where, v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '$' {
			b.WriteByte(v[i])
			continue
		}
		end := strings.IndexByte(v[i:], '}')
		if !strings.HasPrefix(v[i:], "${") || end < 0 {
			b.WriteString("$$")
			continue
		}
		ref := v[i+2 : i+end]
		b.WriteString(im.ref(where, ref))
		i += end
	}
	return b.String()
}

func (im *importer) ref(where, ref string) string {
	name, arg, hasArg := strings.Cut(ref, ":")
	switch {
	case ref == "userHome":
		return "${HOME}"
	case hasArg && name == "env" && registry.ValidEnvName(arg):
		return "${" + arg + "}"
	case hasArg && name == "input":
		env := strings.ToUpper(strings.Map(func(r rune) rune {
			if r < 0x80 && registry.IsBareKeyByte(byte(r)) && r != '-' {
				return r
			}
			return '_'
		}, arg))
		if !registry.ValidEnvName(env) {
			env = "_" + env
		}
		im.note("%s uses VS Code input ${input:%s}; it now reads ${%s} from mcphub's environment", where, arg, env)
		return "${" + env + "}"
	case registry.ValidEnvName(name) && hasArg && strings.HasPrefix(arg, "-"):
		im.note("%s: ${%s:-...} defaults are not supported; it now reads ${%s}", where, name, name)
		return "${" + name + "}"
	case registry.ValidEnvName(ref):
		if slices.Contains(vscodeOnly, ref) {
			im.note("%s uses ${%s}, which only an editor knows; set %s in mcphub's environment or edit the value", where, ref, ref)
		}
		return "${" + ref + "}"
	}
	im.note("%s uses ${%s}, which mcphub cannot map; kept as literal text", where, ref)
	return "$${" + ref + "}"
}

// envVarName makes s a valid variable name: upper case, with every
// character other than A-Z, 0-9 and _ turned into _, and a leading _ when
// it would start with a digit.
func envVarName(s string) string {
	n := strings.ToUpper(strings.Map(func(r rune) rune {
		if r < 0x80 && registry.IsBareKeyByte(byte(r)) && r != '-' {
			return r
		}
		return '_'
	}, s))
	if len(n) > 200 {
		n = n[:200]
	}
	if !registry.ValidEnvName(n) {
		n = "_" + n
	}
	return n
}

// globsOf turns tool names into path.Match patterns that match exactly
// those names, escaping the characters patterns treat specially.
func globsOf(names []string) []string {
	var out []string
	for _, n := range names {
		if n == "" || slices.Contains(out, n) {
			continue
		}
		var b strings.Builder
		for _, r := range n {
			if strings.ContainsRune(`*?[]\`, r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		out = append(out, b.String())
	}
	return out
}

// msDuration converts a client's timeout in milliseconds, rounded up to
// whole milliseconds and capped at a day, since a larger one is a mistake.
func msDuration(ms float64) time.Duration {
	return time.Duration(min(math.Ceil(ms), float64(24*time.Hour/time.Millisecond))) * time.Millisecond
}
