package acl

import (
	"fmt"
	"strings"
)

// Perm is a permission bit set, RocketMQ's Permission byte.
type Perm uint8

// Permission bits (RocketMQ's values).
const (
	Deny Perm = 1
	Any  Perm = 2
	Pub  Perm = 4
	Sub  Perm = 8
)

// ParsePerm reads "DENY", "PUB", "SUB", "PUB|SUB" or "SUB|PUB" (case and
// blanks around the words ignored). RocketMQ maps anything else to DENY;
// here anything else is an error, so a typo in the file is reported rather
// than silently denying.
func ParsePerm(s string) (Perm, error) {
	var p Perm
	parts := strings.Split(s, "|")
	for _, w := range parts {
		switch strings.ToUpper(strings.TrimSpace(w)) {
		case "DENY":
			if len(parts) > 1 {
				return 0, fmt.Errorf("permission %q: DENY cannot be combined", s)
			}
			p |= Deny
		case "PUB":
			p |= Pub
		case "SUB":
			p |= Sub
		default:
			return 0, fmt.Errorf("permission %q: want DENY, PUB, SUB or PUB|SUB", s)
		}
	}
	return p, nil
}

// Allows reports whether an account holding owned may do what needs
// needed (RocketMQ's Permission.checkPermission).
func (owned Perm) Allows(needed Perm) bool {
	if owned&Deny != 0 {
		return false
	}
	if needed&Any != 0 {
		return owned&(Pub|Sub) != 0
	}
	return needed&owned != 0
}

func (p Perm) String() string {
	switch {
	case p&Deny != 0:
		return "DENY"
	case p&(Pub|Sub) == Pub|Sub:
		return "PUB|SUB"
	case p&Pub != 0:
		return "PUB"
	case p&Sub != 0:
		return "SUB"
	case p&Any != 0:
		return "ANY"
	}
	return "NONE"
}
