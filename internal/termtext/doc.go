// Package termtext shapes text for a terminal: one line cut to a width,
// counted in the columns a terminal gives each character, control
// characters a server may have sent taken out, tables, counts and progress.
//
// It owns no output of its own: the CLI's printers (cmd/mcphub) and the
// hub client's sentences (hubclient) use it to say things the same way. It
// imports only the standard library.
package termtext
