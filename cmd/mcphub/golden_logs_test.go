package main

import (
	"testing"
	"time"

	"github.com/mcphub/mcphub/logfile"
	"github.com/mcphub/mcphub/logfile/logfiletest"
)

// goldenLog is a hub's log as `mcphub serve` leaves it: a gzipped backup
// rotated out before hub.log, whose records carry the local offset slog
// writes (+01:00 here) and are shown in UTC. It has hub records, stdio
// servers' stderr lines (one with terminal colours and a newline), a
// record with groups and quoted values, and a line that is not JSON.
func goldenLog(t *testing.T, e *goldenEnv) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, "2026-11-25T"+s+"+01:00")
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	logfiletest.WriteFiles(t, logfile.Dir(e.dataDir), map[string][]string{
		"hub-2026-11-25T10-59-30.000.log.gz": {
			logfiletest.Record(at("11:58:12.004"), "INFO", "", "mcphub starting", "version", "1.4.0", "listen", "127.0.0.1:7733"),
			logfiletest.Record(at("11:59:01.250"), "WARN", "github", "npm warn exec The following package was not found and will be installed: @modelcontextprotocol/server-github@2025.4.8", "stream", "stderr"),
		},
		"hub.log": {
			logfiletest.Record(at("11:59:45.000"), "INFO", "github", "connected", "tools", 26, "pid", 48213),
			logfiletest.Record(at("11:59:58.731"), "WARN", "flaky", "\x1b[31mError\x1b[0m: Cannot find module './flaky-server.js'\n    at Module._resolveFilename", "stream", "stderr"),
			logfiletest.Record(at("11:59:58.790"), "ERROR", "flaky", "server exited", "err", "process exited with status 1", "restarts", 5),
			`{"time":"2026-11-25T11:59:59.5+01:00","level":"INFO","msg":"session started","session":{"id":"3f2a","client":"claude-code 2.1"},"protocol":"2025-11-25"}`,
			"fatal error: concurrent map writes",
			logfiletest.Record(at("12:00:00.123"), "WARN", "github", "GitHub MCP Server running on stdio", "stream", "stderr"),
			logfiletest.Record(at("12:00:01.000"), "INFO", "", "stopping", "signal", "interrupt"),
		},
	})
}

// TestGoldenLogs runs `mcphub logs` on goldenLog, in the way TestGoldenCLI
// runs the other commands, and compares with testdata/golden/logs*.txt.
func TestGoldenLogs(t *testing.T) {
	cases := []goldenCase{
		{name: "logs-help", args: []string{"logs", "--help"}},
		{name: "logs-no-logs", args: []string{"logs"}},
		{name: "logs", args: []string{"logs"}, setup: goldenLog},
		{name: "logs-server", args: []string{"logs", "github", "-n", "2"}, setup: goldenLog},
		{name: "logs-json", args: []string{"logs", "flaky", "--json"}, setup: goldenLog},
		{name: "logs-unknown-server", args: []string{"logs", "githb"}, setup: goldenLog},
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
