package dataset

import (
	"github.com/petrel-crawler/petrel/internal/store"
)

// obj is a JSON object whose members keep their order, as the WAT's do.
// A value is a string, a bool, an obj, a []obj, a []string or rawJSON.
type obj []member

// rawJSON is a value already in JSON.
type rawJSON []byte

type member struct {
	key   string
	value any
}

// add appends the member key: value.
func (o *obj) add(key string, value any) { *o = append(*o, member{key, value}) }

// addNonEmpty appends key: value unless value is "".
func (o *obj) addNonEmpty(key, value string) {
	if value != "" {
		o.add(key, value)
	}
}

// appendJSON appends o as JSON to b.
func (o obj) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = store.AppendJSONString(b, m.key)
		b = append(b, ':')
		b = appendValue(b, m.value)
	}
	return append(b, '}')
}

// appendValue appends v (see obj) as JSON.
func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case rawJSON:
		return append(b, v...)
	case string:
		return store.AppendJSONString(b, v)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case obj:
		return v.appendJSON(b)
	case []obj:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendJSON(b)
		}
		return append(b, ']')
	case []string:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = store.AppendJSONString(b, e)
		}
		return append(b, ']')
	}
	return append(b, "null"...)
}
