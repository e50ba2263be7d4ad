// Package redact keeps secrets out of mcphub's logs, errors and CLI output.
// Registry env values, header values, tokens and URL credentials all pass
// through here before anything prints them.
package redact

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Mask is what a secret value is shown as.
const Mask = "***"

// URL hides a URL's password and its query values, where some remote servers
// expect an API key. An unparsable URL is not echoed at all.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid url>"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{Mask}
		}
		u.RawQuery = strings.ReplaceAll(q.Encode(), "%2A%2A%2A", Mask)
	}
	return u.Redacted()
}

// Keys renders a map of secrets as "K1=***, K2=***", keys sorted.
func Keys(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	for i, k := range keys {
		keys[i] = k + "=" + Mask
	}
	return strings.Join(keys, ", ")
}
