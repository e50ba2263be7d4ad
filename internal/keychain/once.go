package keychain

import "sync"

// Once is mcphub's store of grants, opened once per process when a
// command first needs it: serve's upstreams, login, logout and probe
// --save share one *Store, its file lock and its notice. The zero
// value is ready to use.
type Once struct {
	once  sync.Once
	store *Store
}

// Open returns the store of grants (the OS keychain, or the file it falls
// back to in dataDir), opening it on the first call; later calls return
// the same store whatever dataDir they name.
func (k *Once) Open(dataDir string) *Store {
	k.once.Do(func() { k.store = Open("mcphub", dataDir) })
	return k.store
}
