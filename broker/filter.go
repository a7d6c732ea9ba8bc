package broker

import (
	"errors"
	"strings"

	"github.com/samsamq/samsa/storage/record"
)

// Expression types (RocketMQ's ExpressionType).
const (
	ExpTag   = "TAG"
	ExpSQL92 = "SQL92"
)

// ErrUnsupportedFilter: the subscription uses an expression type the broker
// does not evaluate (SQL92, as RocketMQ with enablePropertyFilter=false).
var ErrUnsupportedFilter = errors.New("broker: filter expression type not supported")

// tagFilter is a parsed TAG subscription: the hash codes of its tags, as
// RocketMQ's FilterAPI builds codeSet; a ConsumeQueue entry matches when its
// tag hash is in the set.
type tagFilter struct {
	codes map[int32]struct{}
	tags  []string
}

// parseSubscription parses expression ("*", "", or "a || b || c") of type
// expType ("" is TAG). nil means every message matches.
func parseSubscription(expType, expression string) (*tagFilter, error) {
	if expType != "" && !strings.EqualFold(expType, ExpTag) {
		return nil, ErrUnsupportedFilter
	}
	expression = strings.TrimSpace(expression)
	if expression == "" || expression == "*" {
		return nil, nil
	}
	f := &tagFilter{codes: make(map[int32]struct{})}
	for _, t := range strings.Split(expression, "||") {
		if t = strings.TrimSpace(t); t != "" {
			f.tags = append(f.tags, t)
			f.codes[int32(record.TagsCode(t))] = struct{}{}
		}
	}
	if len(f.tags) == 0 {
		return nil, nil
	}
	return f, nil
}

// match reports whether a ConsumeQueue tag hash passes (nil f: always).
func (f *tagFilter) match(tagsCode int64) bool {
	if f == nil {
		return true
	}
	_, ok := f.codes[int32(tagsCode)]
	return ok
}

// fn returns f as the store's tag-filter callback (nil for "all").
func (f *tagFilter) fn() func(int64) bool {
	if f == nil {
		return nil
	}
	return f.match
}
