package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// DecodeJSON unmarshals body into v. A malformed or truncated body becomes an error
// coded Unavailable that names the provider, what was being read (what, e.g. "page 2")
// and the JSON path where the body broke:
//
//	azure: page 2: truncated JSON body: ends inside Items[3].retailPrice (after 2817 bytes)
//	lambda: instance types: malformed JSON at data.gpu_1x_a10.instance_type.price_cents_per_hour: want number, got string
func DecodeJSON(provider, what string, body []byte, v any) error {
	prefix := provider + ": "
	if what != "" {
		prefix += what + ": "
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return pricing.Errorf(pricing.Unavailable, "%sempty body where JSON was expected", prefix)
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = PathAt(body, te.Offset)
		}
		if field == "" {
			field = "(top level)"
		}
		return pricing.Errorf(pricing.Unavailable, "%smalformed JSON at %s: want %s, got %s", prefix, field, te.Type, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		path := PathAt(body, se.Offset)
		if path == "" {
			path = "(top level)"
		}
		if se.Offset >= int64(len(body)) || strings.Contains(se.Error(), "unexpected end") {
			return pricing.Errorf(pricing.Unavailable, "%struncated JSON body: ends inside %s (after %d bytes)", prefix, path, len(body))
		}
		return pricing.Errorf(pricing.Unavailable, "%smalformed JSON at %s (byte %d): %v", prefix, path, se.Offset, se)
	}
	return pricing.Errorf(pricing.Unavailable, "%sdecoding JSON: %v", prefix, err)
}

// PathAt returns the JSON path ("Items[3].retailPrice") of the value being read at byte
// offset of body, walking the tokens before it; "" at the top level.
func PathAt(body []byte, offset int64) string {
	type frame struct {
		object bool
		key    string
		index  int
		// wantKey: inside an object, the next string token is a key.
		wantKey bool
	}
	var stack []frame
	if offset > int64(len(body)) {
		offset = int64(len(body))
	}
	dec := json.NewDecoder(bytes.NewReader(body[:offset]))
	dec.UseNumber()
	// value marks that a value (scalar or container start) was consumed in the top frame.
	value := func() {
		if n := len(stack); n > 0 {
			f := &stack[n-1]
			if f.object {
				f.wantKey = true
			} else {
				f.index++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{index: 0})
			case '}', ']':
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				value()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				stack[n-1].key = t
				stack[n-1].wantKey = false
				continue
			}
			if dec.InputOffset() < offset {
				value()
			}
		default:
			// A number that runs to the cut may be the cut-off value: keep its key.
			if dec.InputOffset() < offset {
				value()
			}
		}
	}
	// A container counts as its parent's value only once it closes, so an array's index
	// is the element being read; an object waiting for its next key adds no key.
	var sb strings.Builder
	for _, f := range stack {
		if f.object {
			if f.key == "" || f.wantKey {
				continue
			}
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(f.key)
		} else {
			sb.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	return sb.String()
}

// Field formats a missing-field error the adapters share:
// "lambda: instance type gpu_1x_a10: price_cents_per_hour is missing".
func Field(provider, where, field string) error {
	return pricing.Errorf(pricing.Unavailable, "%s: %s: %s is missing", provider, where, field)
}
