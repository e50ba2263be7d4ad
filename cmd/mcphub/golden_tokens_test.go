package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// goldenProfiles are the golden tokens hub's profiles: notes without its
// failing tool, one of its tools described anew, and every tool in search
// mode.
const goldenProfiles = `[profiles.notes-only]
servers = ["notes"]
exclude = ["notes__fail"]

[profiles.notes-only.overrides."notes__search"]
description = "Searches the notes."

[profiles.finder]
mode = "search"
`

// goldenTokensHub is a hub in this process over the golden notes server,
// under its prefix, and the golden weather server without one, with the
// golden profiles, and the registry text that points the CLI at it.
func goldenTokensHub(t *testing.T) (addr, registryText string) {
	t.Helper()
	notes := startUpstream(t, "notes", upstreamOpts{server: goldenNotesServer()})
	weather := startUpstream(t, "weather", upstreamOpts{server: goldenWeatherServer()})
	servers := remoteServer("notes", notes.url, "") + remoteServer("weather", weather.url, `prefix = ""`) + goldenProfiles
	h := startInproc(t, servers, hubConfig{})
	s := connectSDK(t, h.url+"/mcp", sdkOpts{})
	defer s.Close()
	eventually(t, 10*time.Second, "the hub lists the tools of notes and weather", func() error {
		names, err := s.tools()
		if err != nil {
			return err
		}
		if !slices.Contains(names, "notes__add_note") || !slices.Contains(names, "forecast") {
			return fmt.Errorf("the hub lists %v", names)
		}
		return nil
	})
	eventually(t, 10*time.Second, "the hub serves the profiles' tools", func() error {
		for _, p := range h.h.Status().Profiles {
			if p.Tools != map[string]int{"notes-only": 3, "finder": 5}[p.Name] {
				return fmt.Errorf("profile %s serves %d tools", p.Name, p.Tools)
			}
		}
		return nil
	})
	addr = strings.TrimPrefix(h.url, "http://")
	return addr, fmt.Sprintf("[hub]\nlisten = %q\n\n%s", addr, servers)
}

// TestGoldenTokens runs tokens against a hub in this process with a
// prefixed and an unprefixed server and two profiles, one in search mode,
// and compares what a user sees with testdata/golden/tokens*.txt (-update
// rewrites them).
func TestGoldenTokens(t *testing.T) {
	addr, reg := goldenTokensHub(t)
	withHub := func(t *testing.T, e *goldenEnv) {
		e.addPort(addr)
		e.writeRegistry(t, reg)
	}
	cases := []goldenCase{
		{name: "tokens-help", args: []string{"tokens", "--help"}},
		{name: "tokens", args: []string{"tokens"}, setup: withHub},
		{name: "tokens-tools", args: []string{"tokens", "-v", "--encoding", "cl100k_base"}, setup: withHub},
		{name: "tokens-json", args: []string{"tokens", "--json"}, setup: withHub},
		{name: "tokens-stale-registry", args: []string{"tokens"}, setup: func(t *testing.T, e *goldenEnv) {
			// A registry that lacks the unprefixed weather server and the
			// profiles: the hub's catalog still says whose each tool is,
			// and the hub's profiles are what it serves.
			withHub(t, e)
			text, _, _ := strings.Cut(reg, "[servers.weather]")
			e.writeRegistry(t, text)
		}},
		{name: "tokens-profile", args: []string{"tokens", "--profile", "notes-only", "-v"}, setup: withHub},
		{name: "tokens-profile-search", args: []string{"tokens", "--profile", "finder"}, setup: withHub},
		{name: "tokens-profile-search-json", args: []string{"tokens", "--profile", "finder", "--json"}, setup: withHub},
		{name: "tokens-profile-unknown", args: []string{"tokens", "--profile", "findr"}, setup: withHub},
		{name: "tokens-bad-encoding", args: []string{"tokens", "--encoding", "gpt2"}, setup: withHub},
		{name: "tokens-no-hub", args: []string{"tokens"}, setup: func(t *testing.T, e *goldenEnv) {
			e.writeRegistry(t, fmt.Sprintf("[hub]\nlisten = %q\n", e.closedAddr(t)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := goldenNewEnv(t)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			goldenCheck(t, tc.name, goldenRun(e, tc.args))
		})
	}
}
