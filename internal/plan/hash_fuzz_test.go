package plan_test

// FuzzHashCanonical checks that the plan, desired and snapshot hashes are canonical: the
// same JSON value, re-encoded with its keys in another order, with whitespace between
// tokens, with other spellings of its numbers (1, 1.0, 1e0, 10e-1, 0.1E1) and of its
// strings (\u escapes), hashes the same; and that changing one leaf changes the hash.
//
// Run it with `make fuzz`; `go test` runs the seeds below.

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

func FuzzHashCanonical(f *testing.F) {
	for _, doc := range []string{
		`{"spec":{"mode":"Automatic","deschedulingIntervalSeconds":60,"profiles":["AffinityAndTaints","KubeVirtRelieveAndMigrate"]}}`,
		`{"b":1,"a":1.0,"c":1e0,"d":10e-1,"e":0.1E1,"f":-0,"g":0.0}`,
		`{"ratio":1.5,"tiny":1e-7,"huge":1.7976931348623157e308,"neg":-2.5e-3}`,
		`{"big":9007199254740993,"bigger":9223372036854775807,"min":-9223372036854775808,"past":18446744073709551616}`,
		`{"s":"a/b\"c\\d\u00e9\ud83d\ude00","empty":"","nested":{"list":[1,[2,{"x":null}],true,false]}}`,
		`{"":{},"list":[],"obj":{"deep":{"deeper":{}}}}`,
		`[1,2,3]`,
		`"just a string"`,
		`-12.5e+2`,
		`{"dup":1,"dup":{"last":"wins"},"Dup":true}`,
		"not JSON: the fuzzer builds a value from these bytes",
		"\x03\x07\x05\x00\x01\x02\xff\xfe\x80\x10",
	} {
		f.Add(doc, uint64(1))
	}
	f.Fuzz(func(t *testing.T, doc string, seed uint64) {
		tree, raw := hashInput(doc)
		if !inFloatRange(tree) || json.Unmarshal(raw, new(any)) != nil {
			// Beyond float64 the API machinery cannot decode the value at all (the API server
			// refuses it), so there is no hash to compare. That holds for every number of
			// the text, also one under a key that a later duplicate key replaces.
			return
		}
		rng := rand.New(rand.NewPCG(seed, uint64(len(doc))))
		checkRawHashes(t, tree, raw, rng)
		checkDecodedHashes(t, tree, raw, rng)
	})
}

// checkRawHashes: DesiredHash and PlanHash take desired states as raw JSON, which may
// come back from the API server re-encoded; every encoding of the same value must give
// the same hashes, and a changed leaf a different one.
func checkRawHashes(t *testing.T, tree any, raw []byte, rng *rand.Rand) {
	t.Helper()
	desiredHash := func(text []byte) string {
		return plan.DesiredHash([]advisorv1alpha1.PlanItem{{Name: "item", DesiredState: &runtime.RawExtension{Raw: text}}})
	}
	planHash := func(text []byte) string {
		return plan.PlanHash(3, []advisorv1alpha1.PlanItem{{Name: "item", DesiredState: &runtime.RawExtension{Raw: text}}})
	}
	wantDesired, wantPlan := desiredHash(raw), planHash(raw)
	for range 4 {
		variant := encodeJSON(tree, rng, spellAll)
		if got := desiredHash(variant); got != wantDesired {
			t.Fatalf("DesiredHash depends on the encoding:\n%s\nhashes %s, and\n%s\nhashes %s", raw, wantDesired, variant, got)
		}
		if got := planHash(variant); got != wantPlan {
			t.Fatalf("PlanHash depends on the encoding:\n%s\nhashes %s, and\n%s\nhashes %s", raw, wantPlan, variant, got)
		}
	}
	changed, what := changeLeaf(tree, rng)
	other := encodeJSON(changed, nil, spellVerbatim)
	if desiredHash(other) == wantDesired {
		t.Fatalf("DesiredHash does not see a changed leaf (%s):\n%s\nand\n%s\nboth hash %s", what, raw, other, wantDesired)
	}
	if planHash(other) == wantPlan {
		t.Fatalf("PlanHash does not see a changed leaf (%s):\n%s\nand\n%s\nboth hash %s", what, raw, other, wantPlan)
	}
}

// checkDecodedHashes: the snapshot and values hashes, and HashJSON, hash objects decoded
// the way the API machinery decodes them (integers as int64, other numbers as float64).
func checkDecodedHashes(t *testing.T, tree any, raw []byte, rng *rand.Rand) {
	t.Helper()
	desired := decodeTarget(t, raw)
	wantValues, wantJSON := plan.ValuesHash(desired, desired), plan.HashJSON(desired.Object)
	for range 4 {
		variant := encodeJSON(tree, rng, spellDecodable)
		obj := decodeTarget(t, variant)
		if got := plan.ValuesHash(desired, obj); got != wantValues {
			t.Fatalf("ValuesHash depends on the encoding:\n%s\nhashes %s, and\n%s\nhashes %s", raw, wantValues, variant, got)
		}
		if got := plan.HashJSON(obj.Object); got != wantJSON {
			t.Fatalf("HashJSON depends on the encoding:\n%s\nhashes %s, and\n%s\nhashes %s", raw, wantJSON, variant, got)
		}
	}
	changed, what := changeLeaf(tree, rng)
	other := encodeJSON(changed, nil, spellVerbatim)
	obj := decodeTarget(t, other)
	if plan.ValuesHash(desired, obj) == wantValues {
		t.Fatalf("ValuesHash does not see a changed leaf (%s):\n%s\nand\n%s\nboth hash %s", what, raw, other, wantValues)
	}
	if plan.HashJSON(obj.Object) == wantJSON {
		t.Fatalf("HashJSON does not see a changed leaf (%s):\n%s\nand\n%s\nboth hash %s", what, raw, other, wantJSON)
	}
}

// decodeTarget decodes spec as the spec of a target, the way objects are read from the
// API server.
func decodeTarget(t *testing.T, spec []byte) *unstructured.Unstructured {
	t.Helper()
	doc := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":` + string(spec) + `}`
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(doc)); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return obj
}

// hashInput is doc's value (decoded with json.Number, so every number keeps its
// spelling) and doc itself when doc is JSON; otherwise a value built from doc's bytes
// and its encoding.
func hashInput(doc string) (any, []byte) {
	if json.Valid([]byte(doc)) {
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			return v, []byte(doc)
		}
	}
	g := &valueGen{data: []byte(doc)}
	v := g.value(0)
	return v, encodeJSON(v, nil, spellVerbatim)
}

// valueGen builds a JSON value from bytes, so that inputs that are not JSON still test
// something.
type valueGen struct {
	data []byte
	pos  int
}

func (g *valueGen) next() byte {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return b
}

func (g *valueGen) uint64() uint64 {
	var n uint64
	for range 8 {
		n = n<<8 | uint64(g.next())
	}
	return n
}

func (g *valueGen) str() string {
	n := int(g.next() % 12)
	var b strings.Builder
	for range n {
		b.WriteByte(g.next())
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

func (g *valueGen) value(depth int) any {
	kind := g.next() % 8
	if depth >= 4 && kind >= 6 {
		kind %= 6
	}
	switch kind {
	case 0:
		return nil
	case 1:
		return g.next()%2 == 0
	case 2:
		return json.Number(strconv.Itoa(int(int8(g.next()))))
	case 3:
		// Any int64, most of them beyond 2^53, where float64 stops being exact.
		return json.Number(strconv.FormatInt(int64(g.uint64()), 10))
	case 4:
		mantissa := strconv.FormatUint(g.uint64()%1_000_000_000_000, 10)
		return json.Number(mantissa + "e" + strconv.Itoa(int(g.next()%61)-30))
	case 5:
		return g.str()
	case 6:
		list := []any{}
		for range int(g.next() % 4) {
			list = append(list, g.value(depth+1))
		}
		return list
	default:
		obj := map[string]any{}
		for range int(g.next() % 4) {
			obj[g.str()] = g.value(depth + 1)
		}
		return obj
	}
}

// inFloatRange tells whether every number of v decodes as a float64.
func inFloatRange(v any) bool {
	switch x := v.(type) {
	case json.Number:
		_, err := strconv.ParseFloat(string(x), 64)
		return err == nil
	case []any:
		for _, e := range x {
			if !inFloatRange(e) {
				return false
			}
		}
	case map[string]any:
		for _, e := range x {
			if !inFloatRange(e) {
				return false
			}
		}
	}
	return true
}

// spelling says how encodeJSON writes numbers.
type spelling int

const (
	// spellVerbatim writes every number as it was given.
	spellVerbatim spelling = iota
	// spellAll writes every number in any spelling of its value, -0 for 0 included.
	spellAll
	// spellDecodable writes numbers in spellings the API machinery decodes to the same Go
	// value: integers between 2^53 and 2^63 decode to an exact int64 when written as
	// integers but to a rounded float64 otherwise, and -0.0 to a float64 negative zero but
	// -0 to int64 0. The API server stores numbers decoded that way, so objects read from
	// it never hold two spellings of those; they keep the spelling they were given.
	spellDecodable
)

// encodeJSON writes v as JSON. With rng, keys come in a random order, whitespace goes
// between tokens, strings are escaped at random and numbers are spelled as sp allows;
// without, keys are sorted and nothing is respelled.
func encodeJSON(v any, rng *rand.Rand, sp spelling) []byte {
	var b bytes.Buffer
	writeJSON(&b, v, rng, sp)
	return b.Bytes()
}

func writeSpace(b *bytes.Buffer, rng *rand.Rand) {
	if rng == nil {
		return
	}
	for range rng.IntN(3) {
		b.WriteByte(" \t\n\r"[rng.IntN(4)])
	}
}

func writeJSON(b *bytes.Buffer, v any, rng *rand.Rand, sp spelling) {
	writeSpace(b, rng)
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(spellNumber(string(x), rng, sp))
	case string:
		writeString(b, x, rng)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e, rng, sp)
		}
		writeSpace(b, rng)
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if rng != nil {
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeSpace(b, rng)
			writeString(b, k, rng)
			writeSpace(b, rng)
			b.WriteByte(':')
			writeJSON(b, x[k], rng, sp)
		}
		writeSpace(b, rng)
		b.WriteByte('}')
	default:
		panic("unexpected JSON value " + strconv.Quote(string(encodeJSON(x, nil, spellVerbatim))))
	}
	writeSpace(b, rng)
}

// writeString writes s as a JSON string, each character either as itself or escaped
// (with rng, at random).
func writeString(b *bytes.Buffer, s string, rng *rand.Rand) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		mustEscape := r < 0x20 || r == '"' || r == '\\' || (r == utf8.RuneError && size == 1)
		if !mustEscape && (rng == nil || rng.IntN(4) > 0) {
			b.WriteRune(r)
			continue
		}
		if short, ok := shortEscapes[r]; ok && (rng == nil || rng.IntN(2) == 0) {
			b.WriteString(short)
			continue
		}
		upper := rng != nil && rng.IntN(2) == 0
		if r > 0xFFFF {
			r -= 0x10000
			b.WriteString(hexEscape(0xD800+(r>>10), upper))
			b.WriteString(hexEscape(0xDC00+(r&0x3FF), upper))
			continue
		}
		b.WriteString(hexEscape(r, upper))
	}
	b.WriteByte('"')
}

var shortEscapes = map[rune]string{
	'"': `\"`, '\\': `\\`, '/': `\/`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`,
}

// hexEscape is the \uXXXX escape of a UTF-16 code unit.
func hexEscape(r rune, upper bool) string {
	digits := strconv.FormatInt(int64(r), 16)
	if upper {
		digits = strings.ToUpper(digits)
	}
	return `\u` + strings.Repeat("0", 4-len(digits)) + digits
}

// decimal is a JSON number's exact value: sign × digits × 10^exp, digits without leading
// or trailing zeros ("" for zero).
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// parseDecimal reads a JSON number literal; ok is false for exponents too large to
// respell.
func parseDecimal(lit string) (decimal, bool) {
	var d decimal
	s := lit
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 100_000 || e < -100_000 {
			return d, false
		}
		d.exp, s = e, s[:i]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	d.exp -= len(frac)
	d.digits = strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(d.digits, "0")
	d.exp += len(d.digits) - len(trimmed)
	d.digits = trimmed
	if d.digits == "" {
		d.exp = 0
	}
	return d, true
}

// int64Value is d as an int64, if it is an integer in range.
func (d decimal) int64Value() (int64, bool) {
	if d.digits == "" {
		return 0, true
	}
	if d.exp < 0 || len(d.digits)+d.exp > 19 {
		return 0, false
	}
	s := d.digits + strings.Repeat("0", d.exp)
	if d.neg {
		s = "-" + s
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// spellNumber writes lit in a spelling sp allows, chosen by rng.
func spellNumber(lit string, rng *rand.Rand, sp spelling) string {
	d, ok := parseDecimal(lit)
	if rng == nil || sp == spellVerbatim || !ok {
		return lit
	}
	if sp == spellDecodable {
		if d.digits == "" && d.neg {
			return lit
		}
		if n, isInt := d.int64Value(); isInt && (n > 1<<53 || n < -(1<<53)) {
			return lit
		}
	}
	if d.digits == "" {
		sign := ""
		if sp == spellAll && rng.IntN(2) == 0 {
			sign = "-"
		}
		return sign + []string{"0", "0.0", "0e0", "0.000E-7", "0e+12"}[rng.IntN(5)]
	}
	sign := ""
	if d.neg {
		sign = "-"
	}
	extra := rng.IntN(3)
	digits, exp := d.digits+strings.Repeat("0", extra), d.exp-extra
	switch rng.IntN(3) {
	case 0:
		if plain, ok := plainDecimal(digits, exp, rng); ok {
			return sign + plain
		}
		fallthrough
	case 1:
		point := 1 + rng.IntN(len(digits))
		mantissa := digits[:point]
		if point < len(digits) {
			mantissa += "." + digits[point:]
		}
		return sign + mantissa + exponent(exp+len(digits)-point, rng)
	default:
		return sign + "0." + digits + exponent(exp+len(digits), rng)
	}
}

// plainDecimal writes digits × 10^exp without an exponent, if that is short enough.
func plainDecimal(digits string, exp int, rng *rand.Rand) (string, bool) {
	switch {
	case exp >= 0 && len(digits)+exp <= 400:
		s := digits + strings.Repeat("0", exp)
		if rng.IntN(2) == 0 {
			s += "." + strings.Repeat("0", 1+rng.IntN(2))
		}
		return s, true
	case exp < 0 && len(digits) > -exp:
		return digits[:len(digits)+exp] + "." + digits[len(digits)+exp:], true
	case exp < 0 && -exp <= 400:
		return "0." + strings.Repeat("0", -exp-len(digits)) + digits, true
	}
	return "", false
}

func exponent(e int, rng *rand.Rand) string {
	marker := []string{"e", "E"}[rng.IntN(2)]
	if e >= 0 && rng.IntN(2) == 0 {
		marker += "+"
	}
	return marker + strconv.Itoa(e)
}

// changeLeaf returns a copy of v with one leaf (a scalar or an empty list or object),
// chosen by rng, changed to a different value, and what it changed.
func changeLeaf(v any, rng *rand.Rand) (any, string) {
	target := rng.IntN(countLeaves(v))
	var what string
	var walk func(any) any
	walk = func(x any) any {
		switch c := x.(type) {
		case []any:
			if len(c) > 0 {
				out := make([]any, len(c))
				for i, e := range c {
					out[i] = walk(e)
				}
				return out
			}
		case map[string]any:
			if len(c) > 0 {
				out := make(map[string]any, len(c))
				for k, e := range c {
					out[k] = walk(e)
				}
				return out
			}
		}
		if target--; target != -1 {
			return x
		}
		changed := changedValue(x)
		what = string(encodeJSON(x, nil, spellVerbatim)) + " → " + string(encodeJSON(changed, nil, spellVerbatim))
		return changed
	}
	return walk(v), what
}

func countLeaves(v any) int {
	n := 0
	switch c := v.(type) {
	case []any:
		for _, e := range c {
			n += countLeaves(e)
		}
	case map[string]any:
		for _, e := range c {
			n += countLeaves(e)
		}
	}
	return max(n, 1)
}

// changedValue is a value different from leaf.
func changedValue(leaf any) any {
	switch x := leaf.(type) {
	case nil:
		return json.Number("0")
	case bool:
		return !x
	case string:
		return x + "x"
	case json.Number:
		return changedNumber(string(x))
	case []any:
		return []any{nil}
	default:
		return map[string]any{"x": nil}
	}
}

// changedNumber is a number whose value differs from lit's by more than float64
// rounding: an integer in int64 range moves by one, any other number doubles (halves
// near the top of the float64 range), and zero becomes one. An integer spelled with a
// fraction or an exponent is decoded as a float64, which holds every integer only up to
// 2^53: beyond that, 9010000000000011.00 is read as 9010000000000012, so such an integer
// doubles too.
func changedNumber(lit string) json.Number {
	if d, ok := parseDecimal(lit); ok {
		if n, isInt := d.int64Value(); isInt && (isIntegerLiteral(lit) || (n > -1<<53 && n < 1<<53)) {
			if n == math.MaxInt64 {
				return json.Number(strconv.FormatInt(n-1, 10))
			}
			return json.Number(strconv.FormatInt(n+1, 10))
		}
	}
	f, _ := strconv.ParseFloat(lit, 64)
	switch {
	case f == 0:
		return "1"
	case math.Abs(f) > math.MaxFloat64/4:
		f /= 2
	default:
		f *= 2
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// isIntegerLiteral tells whether the API machinery decodes lit as an int64: spelled as an
// integer, in range.
func isIntegerLiteral(lit string) bool {
	_, err := strconv.ParseInt(lit, 10, 64)
	return err == nil
}
