package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Expand expands a value written in the registry's form, as the registry
// does for env, headers, args and paths: each ${NAME} becomes the value
// lookup gives for NAME and each $$ a single $; any other $ is kept as it
// is. unset lists, in order, the names lookup did not know (they expand to
// ""). err reports a reference the registry refuses: an unclosed "${", a
// name that is not letters, digits and _ (not starting with a digit), and
// the VS Code forms ${env:NAME} and ${input:...}. Neither unset nor err
// contains any part of the value.
func Expand(s string, lookup func(string) (string, bool)) (out string, unset []string, err error) {
	return expand(s, lookup)
}

// ExpandHome turns a leading "~" or "~/" in p into the home directory, as
// the registry does for paths: HOME through lookup first, else the
// system's home directory. p is returned unchanged when it has another
// form (such as ~user) or no home directory is known.
func ExpandHome(p string, lookup func(string) (string, bool)) string {
	return expandHome(p, lookup)
}

// expand replaces each ${NAME} in s with the value lookup gives for NAME and
// each $$ with a single $. Any other $ is kept as it is, so a password such
// as "pa$word" needs no escaping. unset lists the names lookup did not know,
// in order, up to a malformed reference, which err reports by its position:
// neither ever contains any part of the value, which may be a password that
// merely looks like a reference ("pa${ss-w0rd}").
func expand(s string, lookup func(string) (string, bool)) (out string, unset []string, err error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) || (s[i+1] != '$' && s[i+1] != '{') {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", unset, fmt.Errorf(`"${" at character %d has no closing "}"; write ${NAME}, or $$ for a literal $`, i+1)
		}
		name := s[i+2 : i+2+end]
		if v, ok := strings.CutPrefix(name, "env:"); ok && validEnvName(v) {
			return "", unset, fmt.Errorf(`"${env:%s}" at character %d is a VS Code form mcphub does not read; write ${%s}`, v, i+1, v)
		}
		if strings.HasPrefix(name, "input:") {
			return "", unset, fmt.Errorf(`"${input:...}" at character %d is a VS Code prompt mcphub cannot ask; set the value in mcphub's environment and write ${NAME}`, i+1)
		}
		if !validEnvName(name) {
			return "", unset, fmt.Errorf(`"${" at character %d does not start a valid variable reference; write ${NAME} with letters, digits and _ (not starting with a digit), or $$ for a literal $`, i+1)
		}
		v, ok := lookup(name)
		if !ok {
			unset = append(unset, name)
		}
		b.WriteString(v)
		i += 2 + end
	}
	return b.String(), unset, nil
}

// validEnvName reports whether name may appear in ${NAME}.
func validEnvName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// expandHome turns a leading "~" or "~/" into the home directory. HOME is
// read through lookup first so that tests and the caller's environment
// decide; other forms such as ~user are left alone.
func expandHome(p string, lookup func(string) (string, bool)) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, `~`+string(filepath.Separator)) {
		return p
	}
	home, ok := lookup("HOME")
	if !ok || home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return p
		}
	}
	return filepath.Join(home, p[1:])
}

// StoreURL is the [store] url with its ${NAME} references expanded through
// lookup; "" when the registry names no store. Errors name the variables,
// never the value.
func (r *Registry) StoreURL(lookup func(string) (string, bool)) (string, error) {
	if r == nil || r.Store.URL == "" {
		return "", nil
	}
	out, unset, err := expand(r.Store.URL, lookup)
	if err != nil {
		return "", fmt.Errorf("%s: [store] url: %w", r.Path, err)
	}
	if len(unset) > 0 {
		return "", fmt.Errorf("%s: [store] url refers to %s, which is not set; set it, or write the URL in the file", r.Path, strings.Join(unset, ", "))
	}
	return out, nil
}
