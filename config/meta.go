package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyInfo is where the file sets one key, or opens one table, and the TOML kind of
// the value it gives.
type keyInfo struct {
	line, col int
	kind      unstable.Kind // unstable.Table for a table header
	value     string        // a scalar's text, for messages
}

// meta is what go-toml's own parser (unstable.Parser, the one its decoder runs) reads
// about the file's keys: where each is set and as what kind of value, by dotted path
// ("refresh.timeout", "providers.gcp"). Validation runs on decoded values, which have
// no positions; meta maps its errors back to the line of the key they are about. The
// decoder's own errors carry their positions already.
type meta map[string]keyInfo

// readMeta indexes the keys of b. A file with a syntax error yields what precedes it:
// the decoder reports the error itself.
func readMeta(b []byte) meta {
	m := meta{}
	var p unstable.Parser
	p.Reset(b)
	var table []string
	arrays := map[string]int{} // [[name]] entries seen so far
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			table = m.addKey(&p, nil, e.Key(), unstable.Table)
		case unstable.ArrayTable:
			// The n-th [[watch]] (0-based) is "watch.n": its keys are "watch.n.job".
			table = m.addKey(&p, nil, e.Key(), unstable.Table)
			name := strings.Join(table, ".")
			table = append(table, strconv.Itoa(arrays[name]))
			arrays[name]++
			m[strings.Join(table, ".")] = m[name]
		case unstable.KeyValue:
			m.addKeyValue(&p, table, e)
		}
	}
	return m
}

// addKeyValue records a key = value line (and, in an inline table, its keys).
func (m meta) addKeyValue(p *unstable.Parser, table []string, kv *unstable.Node) {
	v := kv.Value()
	path := m.addKey(p, table, kv.Key(), v.Kind)
	if v.Kind != unstable.Array && v.Kind != unstable.InlineTable {
		name := strings.Join(path, ".")
		ki := m[name]
		ki.value = string(v.Data)
		m[name] = ki
	}
	if v.Kind == unstable.InlineTable {
		for it := v.Children(); it.Next(); {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				m.addKeyValue(p, path, c)
			}
		}
	}
}

// addKey records the (possibly dotted) key under table and the tables a dotted key
// implies, at the position where the key begins, and returns its full path.
func (m meta) addKey(p *unstable.Parser, table []string, key unstable.Iterator, kind unstable.Kind) []string {
	path := append([]string(nil), table...)
	var at unstable.Position // where the key begins: its first part
	for first := true; key.Next(); first = false {
		n := key.Node()
		path = append(path, string(n.Data))
		if first {
			at = p.Shape(n.Raw).Start
		}
		k := unstable.Table
		if key.IsLast() {
			k = kind
		}
		name := strings.Join(path, ".")
		if _, seen := m[name]; !seen || key.IsLast() {
			m[name] = keyInfo{line: at.Line, col: at.Column, kind: k}
		}
	}
	return path
}

// defined reports whether the file sets the key.
func (m meta) defined(path ...string) bool {
	_, ok := m[strings.Join(path, ".")]
	return ok
}

// near returns the position of the key, else of the nearest enclosing table the file
// has (a required key that is missing is reported at its table's header).
func (m meta) near(path ...string) (keyInfo, bool) {
	for n := len(path); n > 0; n-- {
		if ki, ok := m[strings.Join(path[:n], ".")]; ok {
			return ki, true
		}
	}
	return keyInfo{}, false
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// checkTextKinds finds a key whose field parses text (a duration) but whose value is
// not a TOML string, such as timeout = 600. go-toml hands such a value's raw text to
// UnmarshalText and returns that error without the key or its position; caught here,
// it names both.
func (m meta) checkTextKinds(path string, t reflect.Type) error {
	first := ""
	var firstKI keyInfo
	for name, ki := range m {
		switch ki.kind {
		case unstable.String, unstable.Table, unstable.InlineTable, unstable.Array:
			continue
		}
		ft, ok := fieldOf(t, strings.Split(name, "."))
		if !ok || ft.Kind() == reflect.String || !reflect.PointerTo(ft).Implements(textUnmarshaler) {
			continue
		}
		if first == "" || ki.line < firstKI.line || ki.line == firstKI.line && ki.col < firstKI.col {
			first, firstKI = name, ki
		}
	}
	if first == "" {
		return nil
	}
	msg := fmt.Sprintf("got a TOML %s; want a duration string, e.g. \"10m\"", strings.ToLower(firstKI.kind.String()))
	if firstKI.kind == unstable.Integer {
		msg += fmt.Sprintf(" (%s seconds is \"%ss\")", firstKI.value, firstKI.value)
	}
	return fmt.Errorf("%s:%d:%d: key %q: %s", path, firstKI.line, firstKI.col, first, msg)
}

// fieldOf is the Go type a dotted key decodes into, following toml tags and embedded
// structs as go-toml does.
func fieldOf(t reflect.Type, path []string) (reflect.Type, bool) {
	for _, name := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		ft, ok := structField(t, name)
		if !ok {
			return nil, false
		}
		t = ft
	}
	return t, true
}

func structField(t reflect.Type, name string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.Anonymous && tag == "" {
			if ft, ok := structField(f.Type, name); ok {
				return ft, true
			}
			continue
		}
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}
