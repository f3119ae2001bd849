package cluster

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// Key is a crawl's shared secret: every agent of the crawl holds the same
// one, and every key the cluster uses (the exchange's TLS identity, the
// certificate authority of the crawl's etcd) is derived from it with HKDF-SHA256 and a purpose label,
// so that no two uses share key material.
type Key [32]byte

// KeyFileMode is the permission of a key file: readable by its owner only.
const KeyFileMode = 0o600

// GenerateKey returns a new random key.
func GenerateKey() (Key, error) {
	var k Key
	_, err := rand.Read(k[:])
	return k, err
}

// WriteKeyFile writes a new random key to path (64 hex digits and a
// newline, mode 0600). It refuses to overwrite an existing file.
func WriteKeyFile(path string) error {
	k, err := GenerateKey()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, KeyFileMode)
	if err != nil {
		return fmt.Errorf("cluster: key file: %w", err)
	}
	_, err = fmt.Fprintln(f, hex.EncodeToString(k[:]))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("cluster: key file: %w", err)
	}
	return nil
}

// ReadKeyFile reads a key written by WriteKeyFile. A file that others than
// its owner can read is refused: the key is the crawl's only credential.
func ReadKeyFile(path string) (Key, error) {
	var k Key
	st, err := os.Stat(path)
	if err != nil {
		return k, fmt.Errorf("cluster: --cluster-key-file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return k, fmt.Errorf("cluster: --cluster-key-file %s: mode %#o lets others read the key; chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return k, fmt.Errorf("cluster: --cluster-key-file: %w", err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(raw) != len(k) {
		return k, fmt.Errorf("cluster: --cluster-key-file %s: not a key (want 64 hex digits, as petrel cluster keygen writes)", path)
	}
	copy(k[:], raw)
	return k, nil
}

// Derive returns n bytes of key material for purpose.
func (k Key) Derive(purpose string, n int) []byte {
	b, err := hkdf.Key(sha256.New, k[:], nil, "petrel cluster "+purpose, n)
	if err != nil {
		panic(err) // only for n beyond 255 × 32
	}
	return b
}

// identity returns the Ed25519 key pair every agent of the crawl presents
// on the exchange: holding it proves holding the cluster key.
func (k Key) identity() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(k.Derive("exchange identity", ed25519.SeedSize))
}

// Fingerprint names the key without revealing it (the first 8 bytes of a
// derived value, in hex): equal fingerprints mean equal keys.
func (k Key) Fingerprint() string { return hex.EncodeToString(k.Derive("fingerprint", 8)) }
