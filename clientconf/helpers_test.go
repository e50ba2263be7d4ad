package clientconf

import (
	"path/filepath"

	"github.com/mcphub/mcphub/registry"
)

// envOf is an environment of the given names and values, for LookupEnv.
func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// importKeeping reads a client config as Import does, skipping no entry as
// the hub and keeping literal secrets as they are written.
func importKeeping(data []byte) (specs []registry.ServerSpec, notes []string, err error) {
	res, err := Import(data, ImportOptions{KeepSecrets: true})
	return res.Specs, res.Notes, err
}

// clientSamples is where the real-shaped client files live that the CLI's
// connect --write --move round trip edits; they seed the fuzzers here too,
// so that one set of samples covers both.
var clientSamples = filepath.Join("testdata", "clients")
