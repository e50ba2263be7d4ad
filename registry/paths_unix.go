//go:build !darwin && !windows

package registry

// dataHome is the XDG data directory (see xdgDataHome).
func dataHome() string { return xdgDataHome() }

// LegacyDataDir is where an earlier mcphub kept its data by default, when
// that was elsewhere: "" here, the default has not moved.
func LegacyDataDir() string { return "" }
