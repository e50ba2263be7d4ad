package oauth

import (
	"regexp"
	"slices"

	"github.com/mcphub/mcphub/internal/redact"
)

// addSecrets remembers values to mask in errors and logs.
func (a *Authorizer) addSecrets(vs ...string) {
	a.mu.Lock()
	a.addSecretsLocked(vs...)
	a.mu.Unlock()
}

func (a *Authorizer) addSecretsLocked(vs ...string) {
	for _, v := range vs {
		if v == "" || slices.Contains(a.secrets, v) {
			continue
		}
		a.secrets = append(a.secrets, v)
		a.redactor = nil
	}
	if n := len(a.secrets) - maxSecrets; n > 0 {
		a.secrets = slices.Delete(a.secrets, 0, n)
	}
}

// secretField finds a client secret quoted in JSON, as a registration
// error quotes the answer it could not read.
var secretField = regexp.MustCompile(`(?i)("client_secret"\s*:\s*")(?:[^"\\]|\\.)*"?`)

// scrubErr masks the OAuth secrets this connection knows, any client
// secret quoted as JSON, and the configuration's secrets, in err's
// message; errors.Is and errors.As still see err.
func (a *Authorizer) scrubErr(err error) error {
	if err == nil {
		return nil
	}
	a.mu.Lock()
	r := a.redactor
	if r == nil {
		r = redact.New(append(slices.Clone(a.clientSec), a.secrets...))
		a.redactor = r
	}
	a.mu.Unlock()
	msg := err.Error()
	clean := secretField.ReplaceAllString(r.Text(msg), `${1}`+redact.Mask+`"`)
	if clean = a.scrub(clean); clean != msg {
		return redact.Reworded(err, clean)
	}
	return err
}
