// Package ascii holds the ASCII-only case folding that protocol fields
// need (URL schemes, HTTP header values, HTML attribute values): cheaper
// than the Unicode folding of strings.EqualFold, and exact for these
// fields, whose keywords are ASCII.
package ascii
