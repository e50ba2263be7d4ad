package hubclient

import (
	"strings"
	"testing"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/registry"
)

// TestProfileErrors: a profile the hub lacks is named with the closest it
// has; a hub without profiles says it has none.
func TestProfileErrors(t *testing.T) {
	st := &api.Status{Profiles: []api.ProfileStatus{{Name: "ok", Mode: registry.ModeSearch}, {Name: "bad", Problem: "hub.toml:3:1: profiles.bad.mode: must be \"full\" or \"search\""}}}
	nameOf := func(p api.ProfileStatus) string { return p.Name }
	if err := NoProfileErr("ko", "the hub", st.Profiles, nameOf); err == nil || err.Error() != `no profile "ko" in the hub; its profiles are bad, ok (did you mean ok?)` {
		t.Errorf("unknown profile: %v", err)
	}
	if p := FindProfile(st, ""); p != nil {
		t.Errorf("profileStatus of \"\" = %+v, want nil", p)
	}
	if err := NoProfileErr("x", "the hub", nil, nameOf); err == nil || !strings.Contains(err.Error(), "it has none") {
		t.Errorf("no profiles: %v", err)
	}
}
