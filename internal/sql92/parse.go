package sql92

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// op is what a node computes.
type op uint8

const (
	opConst       op = iota
	opProp           // a property's value
	opNeg            // -x
	opNot            // NOT x
	opBoolCast       // a property used as a condition
	opAnd            // x AND y
	opOr             // x OR y
	opEq             // x = y (also IS NULL, against a NULL constant)
	opGt             // x > y
	opGe             // x >= y
	opLt             // x < y
	opLe             // x <= y
	opContains       // x CONTAINS 's'
	opNotContains    // x NOT CONTAINS 's'
	opStarts         // x STARTSWITH 's'
	opNotStarts      // x NOT STARTSWITH 's'
	opEnds           // x ENDSWITH 's'
	opNotEnds        // x NOT ENDSWITH 's'
	opIn             // x IN ('a', ...)
	opNotIn          // x NOT IN ('a', ...)
)

// node is one expression of the tree.
type node struct {
	op   op
	l, r *node
	val  value  // opConst
	slot int    // opProp: the property's index in Expr.names
	name string // opProp
	str  string // the search string of CONTAINS and its kin
	list []string
	set  map[string]struct{} // IN with five or more strings (RocketMQ's HashSet)
	// boolConst: a TRUE, FALSE or NULL literal (RocketMQ's
	// BooleanConstantExpression), which the compile checks tell apart.
	boolConst bool
}

// isBoolean reports whether n is one of RocketMQ's BooleanExpressions.
func (n *node) isBoolean() bool {
	switch n.op {
	case opConst:
		return n.boolConst
	case opProp, opNeg:
		return false
	}
	return true
}

// Expr is a compiled selector.
type Expr struct {
	src   string
	root  *node
	names []string // the properties it reads, each once
}

// String returns the selector as given.
func (e *Expr) String() string { return e.src }

// Properties returns the names of the properties the selector reads.
func (e *Expr) Properties() []string { return append([]string(nil), e.names...) }

// ErrSyntax is wrapped by every compile error.
var ErrSyntax = errors.New("sql92: invalid selector")

// Compile parses src. The error wraps ErrSyntax and says why, where
// RocketMQ's would say "Invalid MessageSelector".
func Compile(src string) (*Expr, error) {
	p := &parser{lex: lexer{src: src}, e: &Expr{src: src}}
	n, err := p.orExpr()
	if err == nil {
		n, err = p.asBoolean(n)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrSyntax, src, err)
	}
	p.e.root = n
	return p.e, nil
}

type parser struct {
	lex  lexer
	toks []token // lexed and not yet consumed
	e    *Expr
}

// peek returns the k-th token ahead (0: the next), lexing as needed.
func (p *parser) peek(k int) (token, error) {
	for len(p.toks) <= k {
		t, err := p.lex.next()
		if err != nil {
			return token{}, err
		}
		p.toks = append(p.toks, t)
	}
	return p.toks[k], nil
}

func (p *parser) kind() (tokKind, error) {
	t, err := p.peek(0)
	return t.kind, err
}

// take consumes the next token, which must be of kind k.
func (p *parser) take(k tokKind) (token, error) {
	t, err := p.peek(0)
	if err != nil {
		return token{}, err
	}
	if t.kind != k {
		return token{}, fmt.Errorf("unexpected %s at %d", t.describe(), t.pos)
	}
	p.toks = p.toks[1:]
	return t, nil
}

func (t token) describe() string {
	if t.kind == tEOF {
		return "end of input"
	}
	return strconv.Quote(t.text)
}

// is2 reports whether the next two tokens are a and b (JavaCC's
// LOOKAHEAD(2), which lexes the second only when the first matches).
func (p *parser) is2(a, b tokKind) (bool, error) {
	t, err := p.peek(0)
	if err != nil || t.kind != a {
		return false, err
	}
	t, err = p.peek(1)
	return err == nil && t.kind == b, err
}

func (p *parser) orExpr() (*node, error)  { return p.chain(tOr, opOr, p.andExpr) }
func (p *parser) andExpr() (*node, error) { return p.chain(tAnd, opAnd, p.equality) }

// chain parses operand { sep operand }, each pair joined by o.
func (p *parser) chain(sep tokKind, o op, operand func() (*node, error)) (*node, error) {
	l, err := operand()
	for err == nil {
		var k tokKind
		if k, err = p.kind(); err != nil || k != sep {
			break
		}
		p.toks = p.toks[1:]
		var r *node
		if r, err = operand(); err != nil {
			break
		}
		l, err = p.logic(o, l, r)
	}
	return l, err
}

func (p *parser) logic(o op, l, r *node) (*node, error) {
	l, err := p.asBoolean(l)
	if err != nil {
		return nil, err
	}
	if r, err = p.asBoolean(r); err != nil {
		return nil, err
	}
	return &node{op: o, l: l, r: r}, nil
}

// asBoolean is RocketMQ's asBooleanExpression: a boolean expression as it
// is, a property cast, anything else an error.
func (p *parser) asBoolean(n *node) (*node, error) {
	switch {
	case n.isBoolean():
		return n, nil
	case n.op == opProp:
		return &node{op: opBoolCast, l: n}, nil
	}
	return nil, errors.New("expression will not result in a boolean value")
}

func (p *parser) equality() (*node, error) {
	l, err := p.comparison()
	for err == nil {
		var k tokKind
		if k, err = p.kind(); err != nil {
			break
		}
		switch k {
		case tEq, tNe:
			p.toks = p.toks[1:]
			var r *node
			if r, err = p.comparison(); err != nil {
				return nil, err
			}
			if l, err = createEqual(l, r); err == nil && k == tNe {
				l = &node{op: opNot, l: l}
			}
		case tIs:
			var isNull bool
			if isNull, err = p.is2(tIs, tNull); err != nil {
				return nil, err
			}
			if isNull {
				p.toks = p.toks[2:]
				l = &node{op: opEq, l: l, r: nullConst()}
				continue
			}
			p.toks = p.toks[1:]
			if _, err = p.take(tNot); err != nil {
				return nil, err
			}
			if _, err = p.take(tNull); err != nil {
				return nil, err
			}
			l = &node{op: opNot, l: &node{op: opEq, l: l, r: nullConst()}}
		default:
			return l, nil
		}
	}
	return l, err
}

func nullConst() *node { return &node{op: opConst, boolConst: true} }

// createEqual is RocketMQ's ComparisonExpression.createEqual with its
// checks: no NULL literal on either side, and a TRUE/FALSE literal on
// the left compares only with a boolean literal or expression.
func createEqual(l, r *node) (*node, error) {
	for _, n := range []*node{l, r} {
		if n.op == opConst && n.val.k == kNull {
			return nil, errors.New("NULL cannot be compared with = or <>")
		}
	}
	if l.op == opConst && r.op == opConst && l.boolConst && !r.isBoolean() {
		return nil, errors.New("a boolean literal cannot be compared with a non-boolean literal")
	}
	return &node{op: opEq, l: l, r: r}, nil
}

// checkLessThan is RocketMQ's checkLessThanOperand: only numbers and
// non-boolean expressions are ordered.
func checkLessThan(n *node) error {
	if n.op == opConst {
		if n.val.k == kInt || n.val.k == kLong || n.val.k == kDouble {
			return nil
		}
		return errors.New("a non-numeric literal cannot be compared with >, >=, < or <=")
	}
	if n.isBoolean() {
		return errors.New("a boolean expression cannot be compared with >, >=, < or <=")
	}
	return nil
}

func ordered(o op, l, r *node) (*node, error) {
	if err := checkLessThan(l); err != nil {
		return nil, err
	}
	if err := checkLessThan(r); err != nil {
		return nil, err
	}
	return &node{op: o, l: l, r: r}, nil
}

var compareOps = map[tokKind]op{tGt: opGt, tGe: opGe, tLt: opLt, tLe: opLe}
var stringOps = map[tokKind][2]op{
	tContains:   {opContains, opNotContains},
	tStartsWith: {opStarts, opNotStarts},
	tEndsWith:   {opEnds, opNotEnds},
}

func (p *parser) comparison() (*node, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		k, err := p.kind()
		if err != nil {
			return nil, err
		}
		not := false
		if k == tNot {
			// NOT must start NOT CONTAINS/STARTSWITH/ENDSWITH/BETWEEN/IN here.
			t, err := p.peek(1)
			if err != nil {
				return nil, err
			}
			switch t.kind {
			case tContains, tStartsWith, tEndsWith, tBetween, tIn:
			default:
				return nil, fmt.Errorf("unexpected %s after NOT at %d", t.describe(), t.pos)
			}
			p.toks = p.toks[1:]
			not, k = true, t.kind
		}
		if o, ok := compareOps[k]; ok {
			p.toks = p.toks[1:]
			r, err := p.unary()
			if err != nil {
				return nil, err
			}
			if l, err = ordered(o, l, r); err != nil {
				return nil, err
			}
			continue
		}
		if ops, ok := stringOps[k]; ok {
			p.toks = p.toks[1:]
			t, err := p.take(tString)
			if err != nil {
				return nil, err
			}
			o := ops[0]
			if not {
				o = ops[1]
			}
			l = &node{op: o, l: l, str: t.text}
			continue
		}
		switch k {
		case tBetween:
			p.toks = p.toks[1:]
			if l, err = p.between(l, not); err != nil {
				return nil, err
			}
		case tIn:
			p.toks = p.toks[1:]
			if l, err = p.in(l, not); err != nil {
				return nil, err
			}
		default:
			return l, nil
		}
	}
}

func (p *parser) between(v *node, not bool) (*node, error) {
	lo, err := p.unary()
	if err != nil {
		return nil, err
	}
	if _, err := p.take(tAnd); err != nil {
		return nil, err
	}
	hi, err := p.unary()
	if err != nil {
		return nil, err
	}
	if not { // createNotBetween: no bound check
		a, err := ordered(opLt, v, lo)
		if err != nil {
			return nil, err
		}
		b, err := ordered(opGt, v, hi)
		if err != nil {
			return nil, err
		}
		return &node{op: opOr, l: a, r: b}, nil
	}
	if lo.op == opConst && hi.op == opConst {
		if lo.val.k == kNull || hi.val.k == kNull {
			return nil, errors.New("illegal values of between, values can not be null")
		}
		c, ok := compare(hi.val, lo.val)
		if !ok {
			return nil, errors.New("illegal values of between: the bounds do not compare")
		}
		if c < 0 {
			return nil, fmt.Errorf("illegal values of between, left value(%s) must less than or equal to right value(%s)", lo.val, hi.val)
		}
	}
	a, err := ordered(opGe, v, lo)
	if err != nil {
		return nil, err
	}
	b, err := ordered(opLe, v, hi)
	if err != nil {
		return nil, err
	}
	return &node{op: opAnd, l: a, r: b}, nil
}

func (p *parser) in(v *node, not bool) (*node, error) {
	if _, err := p.take(tLParen); err != nil {
		return nil, err
	}
	var list []string
	for {
		t, err := p.take(tString)
		if err != nil {
			return nil, err
		}
		list = append(list, t.text)
		k, err := p.kind()
		if err != nil {
			return nil, err
		}
		if k != tComma {
			break
		}
		p.toks = p.toks[1:]
	}
	if _, err := p.take(tRParen); err != nil {
		return nil, err
	}
	if v.op != opProp {
		return nil, errors.New("expected a property for IN")
	}
	n := &node{op: opIn, l: v, list: list}
	if not {
		n.op = opNotIn
	}
	if len(list) >= 5 {
		n.set = make(map[string]struct{}, len(list))
		for _, s := range list {
			n.set[s] = struct{}{}
		}
	}
	return n, nil
}

func (p *parser) unary() (*node, error) {
	k, err := p.kind()
	if err != nil {
		return nil, err
	}
	switch k {
	case tPlus:
		p.toks = p.toks[1:]
		return p.unary()
	case tMinus:
		p.toks = p.toks[1:]
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &node{op: opNeg, l: n}, nil
	case tNot:
		p.toks = p.toks[1:]
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		if n, err = p.asBoolean(n); err != nil {
			return nil, err
		}
		return &node{op: opNot, l: n}, nil
	}
	return p.primary()
}

func (p *parser) primary() (*node, error) {
	t, err := p.peek(0)
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tLParen:
		p.toks = p.toks[1:]
		n, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		if _, err := p.take(tRParen); err != nil {
			return nil, err
		}
		return n, nil
	case tID:
		p.toks = p.toks[1:]
		return p.prop(t.text), nil
	case tString:
		p.toks = p.toks[1:]
		return &node{op: opConst, val: value{k: kString, s: t.text}}, nil
	case tTrue, tFalse:
		p.toks = p.toks[1:]
		return &node{op: opConst, val: value{k: kBool, b: t.kind == tTrue}, boolConst: true}, nil
	case tNull:
		p.toks = p.toks[1:]
		return nullConst(), nil
	case tDecimal:
		p.toks = p.toks[1:]
		return decimal(t.text)
	case tFloat:
		p.toks = p.toks[1:]
		return float(t.text)
	}
	return nil, fmt.Errorf("unexpected %s at %d", t.describe(), t.pos)
}

func (p *parser) prop(name string) *node {
	for i, n := range p.e.names {
		if n == name {
			return &node{op: opProp, slot: i, name: name}
		}
	}
	p.e.names = append(p.e.names, name)
	return &node{op: opProp, slot: len(p.e.names) - 1, name: name}
}

// decimal is ConstantExpression.createFromDecimal: an Integer when it
// fits 32 bits, else a Long; past 64 bits an error.
func decimal(text string) (*node, error) {
	text = strings.TrimRight(text, "lL")
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("decimal %s out of range", text)
	}
	k := kLong
	if v >= math.MinInt32 && v <= math.MaxInt32 {
		k = kInt
	}
	return &node{op: opConst, val: value{k: k, i: v}}, nil
}

// float is ConstantExpression.createFloat, whose range check refuses 0
// and anything that rounds to 0 (it compares with Double.MIN_VALUE, the
// smallest positive double) as well as infinity.
func float(text string) (*node, error) {
	v, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("float %s: %v", text, err)
	}
	if v > math.MaxFloat64 {
		return nil, fmt.Errorf("%s is greater than %g", text, math.MaxFloat64)
	}
	if v < math.SmallestNonzeroFloat64 {
		return nil, fmt.Errorf("%s is less than %g", text, math.SmallestNonzeroFloat64)
	}
	return &node{op: opConst, val: value{k: kDouble, f: v}}, nil
}
