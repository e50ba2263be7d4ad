package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// encodeServer writes a spec as a [servers.NAME] block, env and headers as
// subtables, keys in the order of hub.toml.example. Only keys the spec sets
// are written, so the file keeps following the defaults.
func encodeServer(s ServerSpec) (string, error) {
	if err := specUTF8(s); err != nil {
		return "", err
	}
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	head := "servers." + quoteKey(s.Name)
	fmt.Fprintf(&b, "[%s]\n", head)
	if s.Command != "" {
		kv("command", quoteString(s.Command))
	}
	if len(s.Args) > 0 {
		kv("args", quoteStrings(s.Args))
	}
	if s.Cwd != "" {
		kv("cwd", quoteString(s.Cwd))
	}
	if len(s.EnvPassthrough) > 0 {
		kv("env_passthrough", quoteStrings(s.EnvPassthrough))
	}
	if s.InheritEnv {
		kv("inherit_env", "true")
	}
	if s.URL != "" {
		kv("url", quoteString(s.URL))
	}
	if s.Transport != "" {
		kv("transport", quoteString(s.Transport))
	}
	if s.Disabled {
		kv("enabled", "false")
	}
	if s.Prefix != nil {
		kv("prefix", quoteString(*s.Prefix))
	}
	if s.Share != "" {
		kv("share", quoteString(s.Share))
	}
	if s.Protocol != "" {
		kv("protocol", quoteString(s.Protocol))
	}
	if len(s.Allow) > 0 {
		kv("allow", quoteStrings(s.Allow))
	}
	if len(s.Deny) > 0 {
		kv("deny", quoteStrings(s.Deny))
	}
	if len(s.Tags) > 0 {
		kv("tags", quoteStrings(s.Tags))
	}
	if o := s.OAuth; o != nil {
		var parts []string
		for _, f := range []struct{ k, v string }{{"client_id", o.ClientID}, {"client_secret", o.RawClientSecret}, {"client_metadata_url", o.ClientMetadataURL}} {
			if f.v != "" {
				parts = append(parts, f.k+" = "+quoteString(f.v))
			}
		}
		if len(o.Scopes) > 0 {
			parts = append(parts, "scopes = "+quoteStrings(o.Scopes))
		}
		kv("oauth", "{ "+strings.Join(parts, ", ")+" }")
	}
	if s.ConnectTimeout != 0 {
		kv("connect_timeout", quoteString(formatDuration(s.ConnectTimeout)))
	}
	if s.CallTimeout != 0 {
		kv("call_timeout", quoteString(formatDuration(s.CallTimeout)))
	}
	for _, sub := range []struct {
		name string
		m    map[string]string
	}{{"env", s.Env}, {"headers", s.Headers}} {
		if len(sub.m) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n[%s.%s]\n", head, sub.name)
		for _, k := range slices.Sorted(maps.Keys(sub.m)) {
			kv(quoteKey(k), quoteString(sub.m[k]))
		}
	}
	return b.String(), nil
}

func specUTF8(s ServerSpec) error {
	all := []string{s.Name, s.Command, s.Cwd, s.URL, s.Transport, s.Share, s.Protocol}
	all = append(all, s.Args...)
	all = append(all, s.Allow...)
	all = append(all, s.Deny...)
	all = append(all, s.Tags...)
	all = append(all, s.EnvPassthrough...)
	if s.Prefix != nil {
		all = append(all, *s.Prefix)
	}
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for k, v := range m {
			all = append(all, k, v)
		}
	}
	for _, v := range all {
		if !utf8.ValidString(v) {
			return fmt.Errorf("registry: server %q: a value is not valid UTF-8, which TOML cannot hold", s.Name)
		}
	}
	return nil
}

// quoteKey writes a key bare when TOML allows it and quoted otherwise.
func quoteKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		if !isBare(k[i]) {
			return quoteString(k)
		}
	}
	return k
}

// quoteString writes a TOML basic string.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func quoteStrings(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = quoteString(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// formatDuration writes "5m" rather than time.Duration's "5m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
