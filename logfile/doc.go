// Package logfile owns the hub's log file: writing it (Tee sends the
// hub's records to the console and, as JSON lines, to
// <data-dir>/logs/hub.log), its rotation by size into gzipped backups
// (lumberjack), reading it back across the backups (ReadHistory, a Query
// and a Record's parsing and one-line Format), and following it as the
// hub appends, through rotations (Follow).
//
// `mcphub serve` writes the log through Tee and `mcphub logs` reads it;
// both are commands in cmd/mcphub, which only parse flags and print. A
// reader never stands in the way of the hub's rotation: on Windows the
// files are opened sharing deletion (open_windows.go).
//
// It imports the standard library and lumberjack only; it never imports
// the hub, client, bridge or registry rooms, nor cmd/.
package logfile
