package store

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

// API keys on both dialects: created, found by id, listed, a live name
// refused twice, last use recorded forward only, revoked once (its name
// free again), seen by a second process on the same store; and the hub's
// secret made once and shared.
func TestKeys(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		a, b := open(t), open(t)
		now := time.Unix(1_800_000_000, 0)
		k := Key{ID: "id1", Name: "ci", Hash: []byte{1, 2, 3}, Profiles: []string{"eng", "ops"}, Created: now, Expires: now.Add(time.Hour)}
		if err := a.CreateKey(k); err != nil {
			t.Fatal(err)
		}
		if err := b.CreateKey(Key{ID: "id2", Name: "ci", Hash: []byte{4}, Created: now}); !errors.Is(err, ErrKeyNameTaken) {
			t.Fatalf("a second live key called ci: %v, want ErrKeyNameTaken", err)
		}
		got, err := b.KeyByID("id1")
		if err != nil || got.Name != "ci" || !bytes.Equal(got.Hash, k.Hash) || !slices.Equal(got.Profiles, k.Profiles) ||
			!got.Created.Equal(now) || !got.Expires.Equal(k.Expires) || !got.LastUsed.IsZero() || !got.Revoked.IsZero() {
			t.Fatalf("KeyByID = %+v, %v", got, err)
		}
		if _, err := b.KeyByID("nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("KeyByID(nope) = %v, want ErrNotFound", err)
		}
		a.TouchKey("id1", now.Add(2*time.Minute))
		a.TouchKey("id1", now.Add(time.Minute)) // older: kept out
		if got, _ := b.KeyByID("id1"); !got.LastUsed.Equal(now.Add(2 * time.Minute)) {
			t.Errorf("LastUsed = %v, want the later use", got.LastUsed)
		}
		if ok, err := b.RevokeKey("ci", now.Add(3*time.Minute)); !ok || err != nil {
			t.Fatalf("RevokeKey = %v, %v", ok, err)
		}
		if ok, _ := b.RevokeKey("ci", now); ok {
			t.Error("revoking a revoked key reported a live one")
		}
		if got, _ := a.KeyByID("id1"); !got.Revoked.Equal(now.Add(3 * time.Minute)) {
			t.Errorf("Revoked = %v", got.Revoked)
		}
		if err := a.CreateKey(Key{ID: "id3", Name: "ci", Hash: []byte{5}, Created: now}); err != nil {
			t.Fatalf("a new key named as a revoked one: %v", err)
		}
		// An expired key frees its name for a new one, and is revoked.
		if err := a.CreateKey(Key{ID: "id4", Name: "tmp", Hash: []byte{6}, Created: now, Expires: time.Now().Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if err := a.CreateKey(Key{ID: "id5", Name: "tmp", Hash: []byte{7}, Created: now}); err != nil {
			t.Fatalf("a new key named as an expired one: %v", err)
		}
		if got, _ := b.KeyByID("id4"); got.Revoked.IsZero() {
			t.Error("the expired key was not revoked when its name was taken")
		}
		a.RevokeKey("tmp", now)
		keys, err := b.Keys()
		if err != nil || len(keys) != 4 || keys[0].ID != "id1" || keys[1].ID != "id3" || keys[1].Profiles != nil {
			t.Fatalf("Keys = %+v, %v", keys, err)
		}
		s1, err := a.HubSecret("api-key-hash")
		if err != nil || len(s1) != 32 {
			t.Fatalf("HubSecret = %x, %v", s1, err)
		}
		if s2, err := b.HubSecret("api-key-hash"); err != nil || !bytes.Equal(s1, s2) {
			t.Errorf("the second process's secret differs: %x, %v", s2, err)
		}
		if s3, _ := a.HubSecret("other"); bytes.Equal(s1, s3) {
			t.Error("two secrets by different names are equal")
		}
	})
}
