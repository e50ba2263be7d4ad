// Package service owns running mcphub as a background service, started by
// the OS's service manager at login (or boot) and restarted when it fails:
// a systemd user unit on Linux, a launchd agent on macOS, a Windows service
// that logs on as the user. It wraps github.com/kardianos/service.
//
// # Controlling the service
//
// A Host is this machine: its OS, its service manager and the user's
// account (NewHost, or a fake in tests). Ready says whether the service
// manager can be used here, with the fix when not; Status, Start, Stop and
// Uninstall control the installed service and report a State, which the
// CLI prints as text or JSON. Errors of the service manager come back as a
// sentence with the fix (Run as administrator, loginctl enable-linger, the
// Windows logon right).
//
// # Installing it
//
// PlanInstall builds the unit from a Request (the mcphub binary, --config,
// --data-dir): mcphub serve with the shell's PATH, proxy and CA
// certificate variables, and no secret: a proxy URL with credentials is
// held back and named. Install writes it and starts it; on Windows it asks
// for the account's password, which it hands to Windows and never prints.
// InstallText says what install did: the variables the service will lack
// (ShellOnly) and how to give them to it (SetInManager), the token it
// needs, and when it starts; WriteState prints a State for a person.
// CheckExecutable refuses a binary go run built.
//
// # Running under the manager
//
// Run lets serve answer the Windows service control manager, which kills a
// program that does not; UnderManager tells serve that a service manager,
// not a shell, started it.
//
// # Imports
//
// Only the standard library and github.com/kardianos/service. It never
// imports hub/, client/, bridge/, registry/ or cmd/: the caller passes in
// what it knows (the executable, the paths, the credential check of
// client.URLCredential, the pid of a running hub, and of hub.toml the
// plain values of a HubConfig).
package service
