package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Pointer is a parsed RFC 6901 JSON pointer, e.g. /spec/profiles/1.
type Pointer struct {
	text   string
	tokens []string
}

// ParsePointer parses an RFC 6901 JSON pointer. The root pointer "" is refused: ignoring
// or patching a whole object is not a field.
func ParsePointer(s string) (Pointer, error) {
	if s == "" || s == "/" {
		return Pointer{}, fmt.Errorf("JSON pointer %q names the whole object, not a field", s)
	}
	if !strings.HasPrefix(s, "/") {
		return Pointer{}, fmt.Errorf("JSON pointer %q must start with /", s)
	}
	raw := strings.Split(s[1:], "/")
	tokens := make([]string, len(raw))
	for i, t := range raw {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 >= len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return Pointer{}, fmt.Errorf("JSON pointer %q: ~ must be followed by 0 or 1 (~0 is ~, ~1 is /)", s)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return Pointer{text: s, tokens: tokens}, nil
}

// ParsePointers parses pointers as status.items[].ignoredFields lists them.
func ParsePointers(ss []string) ([]Pointer, error) {
	out := make([]Pointer, 0, len(ss))
	for _, s := range ss {
		p, err := ParsePointer(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// String is the pointer as written.
func (p Pointer) String() string { return p.text }

// Tokens are the pointer's reference tokens, unescaped.
func (p Pointer) Tokens() []string { return p.tokens }

// fieldPrefix is the leading run of map keys of the pointer (up to the first array
// index), as a FieldPath.
func (p Pointer) fieldPrefix(doc any) FieldPath {
	var out FieldPath
	cur := doc
	for _, t := range p.tokens {
		m, ok := cur.(map[string]any)
		if !ok {
			break
		}
		out = append(out, t)
		cur = m[t]
	}
	return out
}

// get returns the value the pointer names in doc.
func (p Pointer) get(doc any) (any, bool) {
	cur := doc
	for _, t := range p.tokens {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, ok := arrayIndex(t, len(c))
			if !ok {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// remove deletes what the pointer names from doc (maps and arrays are changed in place;
// the returned value replaces doc when an array at the root shrinks).
func (p Pointer) remove(doc any) any {
	return removeAt(doc, p.tokens)
}

func removeAt(cur any, tokens []string) any {
	if len(tokens) == 0 {
		return cur
	}
	t, rest := tokens[0], tokens[1:]
	switch c := cur.(type) {
	case map[string]any:
		if len(rest) == 0 {
			delete(c, t)
			return c
		}
		if child, ok := c[t]; ok {
			c[t] = removeAt(child, rest)
		}
		return c
	case []any:
		i, ok := arrayIndex(t, len(c))
		if !ok {
			return c
		}
		if len(rest) == 0 {
			return append(c[:i:i], c[i+1:]...)
		}
		c[i] = removeAt(c[i], rest)
		return c
	}
	return cur
}

// set stores value where the pointer names in doc, if its parent exists; it reports
// whether it did.
func (p Pointer) set(doc any, value any) bool {
	parent := Pointer{tokens: p.tokens[:len(p.tokens)-1]}
	container, ok := parent.get(doc)
	if !ok {
		return false
	}
	last := p.tokens[len(p.tokens)-1]
	switch c := container.(type) {
	case map[string]any:
		c[last] = value
		return true
	case []any:
		if i, ok := arrayIndex(last, len(c)); ok {
			c[i] = value
			return true
		}
	}
	return false
}

func arrayIndex(token string, length int) (int, bool) {
	if token == "" || (len(token) > 1 && token[0] == '0') {
		return 0, false
	}
	i, err := strconv.Atoi(token)
	if err != nil || i < 0 || i >= length {
		return 0, false
	}
	return i, true
}
