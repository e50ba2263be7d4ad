package hubclient

import (
	"fmt"
	"os"
	"strings"

	"github.com/mcphub/mcphub/registry"
)

// Token returns the bearer token clients of the hub reg describes must
// present, from the registry's token_env variable or, failing that, its
// token_file. It is "" when auth is off. The hub reads its own token the
// same way, so a client on this machine sends what the hub expects.
func Token(reg *registry.Registry) (string, error) {
	if reg.Hub.Auth != registry.AuthToken {
		return "", nil
	}
	if reg.Hub.TokenEnv != "" {
		if v := strings.TrimSpace(os.Getenv(reg.Hub.TokenEnv)); v != "" {
			return v, nil
		}
	}
	if reg.Hub.TokenFile != "" {
		data, err := os.ReadFile(reg.Hub.TokenFile)
		if err != nil {
			return "", fmt.Errorf("auth is on but neither $%s nor the token file could be read: %w", reg.Hub.TokenEnv, err)
		}
		if v := strings.TrimSpace(string(data)); v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("auth is on but neither $%s nor token_file holds a token (create one with: mcphub token)", reg.Hub.TokenEnv)
}
