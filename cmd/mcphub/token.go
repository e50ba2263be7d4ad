package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/mcphub/mcphub/registry"
)

// hubToken returns the bearer token clients of this hub must present, from
// the registry's token_env variable or, failing that, its token_file. It is
// "" when auth is off.
func hubToken(reg *registry.Registry) (string, error) {
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
