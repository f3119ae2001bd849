package revisit

import (
	"encoding/base32"
	"encoding/hex"
	"strings"
)

// ParseRecordID parses a WARC-Record-ID "<urn:uuid:...>" into the 16
// bytes a State keeps (zero when it is not one).
func ParseRecordID(id string) [16]byte {
	var u [16]byte
	h := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(id, "<urn:uuid:"), ">"), "-", "")
	if b, err := hex.DecodeString(h); err == nil && len(b) == 16 {
		copy(u[:], b)
	}
	return u
}

// RecordIDString is the WARC-Record-ID of the UUID u.
func RecordIDString(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return "<urn:uuid:" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:] + ">"
}

// ParseDigest parses a WARC-Payload-Digest "sha1:BASE32" into the 20
// bytes a State keeps (zero when it is not one).
func ParseDigest(d string) [20]byte {
	var sum [20]byte
	if b, err := base32.StdEncoding.DecodeString(strings.TrimPrefix(d, "sha1:")); err == nil && len(b) == len(sum) {
		copy(sum[:], b)
	}
	return sum
}
