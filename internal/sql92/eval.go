package sql92

import (
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// kind is a value's Java type.
type kind uint8

const (
	kNull   kind = iota
	kBool        // java.lang.Boolean
	kInt         // java.lang.Integer
	kLong        // java.lang.Long
	kDouble      // java.lang.Double
	kString      // java.lang.String
)

// value is one Java value of an evaluation.
type value struct {
	k kind
	b bool
	i int64
	f float64
	s string
}

func (v value) String() string {
	switch v.k {
	case kBool:
		return strconv.FormatBool(v.b)
	case kInt, kLong:
		return strconv.FormatInt(v.i, 10)
	case kDouble:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case kString:
		return v.s
	}
	return "NULL"
}

var (
	vNull  = value{}
	vTrue  = value{k: kBool, b: true}
	vFalse = value{k: kBool}
)

func boolOf(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

// env is one message's view: the values of the properties the selector
// reads, by slot.
type env struct {
	vals []value
}

// Match reports whether a message with properties props (RocketMQ's
// stored form, name\x01value\x02 pairs) is selected: the selector
// evaluates to TRUE. NULL, FALSE and an evaluation error do not match.
func (e *Expr) Match(props []byte) bool {
	var buf [8]value
	vals := buf[:0]
	if len(e.names) > len(buf) {
		vals = make([]value, 0, len(e.names))
	}
	vals = vals[:len(e.names)]
	e.fill(vals, props)
	v, ok := e.root.eval(&env{vals: vals})
	return ok && v.k == kBool && v.b
}

// MatchMap is Match for properties in a map.
func (e *Expr) MatchMap(props map[string]string) bool {
	vals := make([]value, len(e.names))
	for i, n := range e.names {
		if s, ok := props[n]; ok && s != "" {
			vals[i] = value{k: kString, s: s}
		}
	}
	v, ok := e.root.eval(&env{vals: vals})
	return ok && v.k == kBool && v.b
}

// fill sets the slots from props as RocketMQ's
// MessageDecoder.string2messageProperties reads them: items between
// \x02 separators, each name\x01value split at its first \x01, both
// non-empty, the last of a name winning. The strings alias props.
func (e *Expr) fill(vals []value, props []byte) {
	s := unsafe.String(unsafe.SliceData(props), len(props))
	for len(s) > 0 {
		item := s
		if i := strings.IndexByte(s, 2); i >= 0 {
			item, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		k := strings.IndexByte(item, 1)
		if k <= 0 || k >= len(item)-1 {
			continue
		}
		name := item[:k]
		for j, n := range e.names {
			if n == name {
				vals[j] = value{k: kString, s: item[k+1:]}
			}
		}
	}
}

// eval computes n; ok is false where RocketMQ's evaluation throws.
func (n *node) eval(e *env) (value, bool) {
	switch n.op {
	case opConst:
		return n.val, true
	case opProp:
		return e.vals[n.slot], true
	case opNeg:
		v, ok := n.l.eval(e)
		if !ok {
			return v, false
		}
		switch v.k {
		case kInt:
			return value{k: kInt, i: int64(-int32(v.i))}, true
		case kLong:
			return value{k: kLong, i: -v.i}, true
		case kDouble:
			return value{k: kDouble, f: -v.f}, true
		}
		return vNull, true
	case opNot:
		v, ok := n.l.eval(e)
		if !ok || v.k == kNull {
			return vNull, ok
		}
		if v.k != kBool {
			return vNull, false // ClassCastException
		}
		return boolOf(!v.b), true
	case opBoolCast:
		v, ok := n.l.eval(e)
		if !ok || v.k == kNull {
			return vNull, ok
		}
		return boolOf(v.k == kBool && v.b), true
	case opAnd, opOr:
		return n.logic(e)
	case opEq:
		l, ok := n.l.eval(e)
		if !ok {
			return vNull, false
		}
		r, ok := n.r.eval(e)
		if !ok {
			return vNull, false
		}
		switch {
		case l.k == kNull && r.k == kNull:
			return vTrue, true
		case l.k == kNull:
			return vNull, true
		case r.k == kNull:
			return vFalse, true
		}
		c, ok := compare(l, r)
		return boolOf(c == 0), ok
	case opGt, opGe, opLt, opLe:
		return n.order(e)
	case opContains, opNotContains, opStarts, opNotStarts, opEnds, opNotEnds:
		if n.str == "" {
			return vFalse, true
		}
		v, ok := n.l.eval(e)
		if !ok {
			return vNull, false
		}
		if v.k != kString {
			return vFalse, true
		}
		var hit bool
		switch n.op {
		case opContains, opNotContains:
			hit = strings.Contains(v.s, n.str)
		case opStarts, opNotStarts:
			hit = strings.HasPrefix(v.s, n.str)
		default:
			hit = strings.HasSuffix(v.s, n.str)
		}
		not := n.op == opNotContains || n.op == opNotStarts || n.op == opNotEnds
		return boolOf(hit != not), true
	case opIn, opNotIn:
		v, ok := n.l.eval(e)
		if !ok || v.k != kString {
			return vNull, ok
		}
		var hit bool
		if n.set != nil {
			_, hit = n.set[v.s]
		} else {
			for _, s := range n.list {
				if s == v.s {
					hit = true
					break
				}
			}
		}
		return boolOf(hit != (n.op == opNotIn)), true
	}
	return vNull, false
}

// logic is LogicExpression's AND and OR: the left decides alone when it
// can; otherwise NULL on either side gives NULL.
func (n *node) logic(e *env) (value, bool) {
	and := n.op == opAnd
	l, ok := n.l.eval(e)
	if !ok {
		return vNull, false
	}
	if l.k != kNull && l.k != kBool {
		return vNull, false // ClassCastException
	}
	if l.k == kBool && l.b != and {
		return l, true
	}
	r, ok := n.r.eval(e)
	if !ok {
		return vNull, false
	}
	if r.k != kNull && r.k != kBool {
		return vNull, false
	}
	if r.k == kBool && r.b != and {
		return r, true
	}
	if l.k == kNull || r.k == kNull {
		return vNull, true
	}
	return boolOf(and), true
}

// order is ComparisonExpression.evaluate for >, >=, <, <=: NULL on a NULL
// side (the right is not evaluated when the left is NULL), two strings
// compared as Doubles, anything else through compare.
func (n *node) order(e *env) (value, bool) {
	l, ok := n.l.eval(e)
	if !ok || l.k == kNull {
		return vNull, ok
	}
	r, ok := n.r.eval(e)
	if !ok || r.k == kNull {
		return vNull, ok
	}
	if l.k == kString && r.k == kString {
		lf, ok1 := javaParseDouble(l.s)
		rf, ok2 := javaParseDouble(r.s)
		if !ok1 || !ok2 {
			return vNull, false
		}
		l, r = value{k: kDouble, f: lf}, value{k: kDouble, f: rf}
	}
	c, ok := compare(l, r)
	if !ok {
		return vNull, false
	}
	switch n.op {
	case opGt:
		return boolOf(c > 0), true
	case opGe:
		return boolOf(c >= 0), true
	case opLt:
		return boolOf(c < 0), true
	}
	return boolOf(c <= 0), true
}

// compare is ComparisonExpression.__compare with convertStringExpressions
// on (as SelectorParser.parse always sets it): values of different types
// are converted after the left one's type, in RocketMQ's order and with
// its quirks (a Boolean compared with a number is less; a Boolean on the
// left of a String throws). ok is false where Java throws.
func compare(l, r value) (c int, ok bool) {
	if l.k != r.k {
		switch l.k {
		case kBool:
			if r.k == kString {
				return 0, false // (String) lv on a Boolean: ClassCastException
			}
			return -1, true
		case kInt:
			switch r.k {
			case kLong:
				l.k = kLong
			case kDouble:
				l = value{k: kDouble, f: float64(l.i)}
			case kString:
				i, ok := javaParseInt(r.s, 32)
				if !ok {
					return 0, false
				}
				r = value{k: kInt, i: i}
			default:
				return -1, true
			}
		case kLong:
			switch r.k {
			case kInt:
				r.k = kLong
			case kDouble:
				l = value{k: kDouble, f: float64(l.i)}
			case kString:
				i, ok := javaParseInt(r.s, 64)
				if !ok {
					return 0, false
				}
				r = value{k: kLong, i: i}
			default:
				return -1, true
			}
		case kDouble:
			switch r.k {
			case kInt, kLong:
				r = value{k: kDouble, f: float64(r.i)}
			case kString:
				f, ok := javaParseDouble(r.s)
				if !ok {
					return 0, false
				}
				r = value{k: kDouble, f: f}
			default:
				return -1, true
			}
		case kString:
			switch r.k {
			case kBool:
				l = value{k: kBool, b: strings.EqualFold(l.s, "true")}
			case kInt, kLong:
				bits := 32
				if r.k == kLong {
					bits = 64
				}
				i, ok := javaParseInt(l.s, bits)
				if !ok {
					return 0, false
				}
				l = value{k: r.k, i: i}
			case kDouble:
				f, ok := javaParseDouble(l.s)
				if !ok {
					return 0, false
				}
				l = value{k: kDouble, f: f}
			default:
				return -1, true
			}
		default:
			return -1, true
		}
	}
	switch l.k {
	case kBool:
		switch {
		case l.b == r.b:
			return 0, true
		case r.b:
			return -1, true
		}
		return 1, true
	case kInt, kLong:
		return cmp3(l.i < r.i, l.i > r.i), true
	case kDouble:
		return javaCompareDouble(l.f, r.f), true
	case kString:
		return javaCompareString(l.s, r.s), true
	}
	return 0, true
}

func cmp3(less, more bool) int {
	switch {
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}

// javaCompareDouble is Double.compare: -0.0 below 0.0, NaN above all and
// equal to itself.
func javaCompareDouble(a, b float64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	ab, bb := javaDoubleBits(a), javaDoubleBits(b)
	return cmp3(ab < bb, ab > bb)
}

func javaDoubleBits(f float64) int64 {
	if math.IsNaN(f) {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}

// javaCompareString is String.compareTo: by UTF-16 code unit. (Only its
// sign at 0 matters to the selector: strings are ordered as Doubles.)
func javaCompareString(a, b string) int {
	return strings.Compare(a, b)
}
