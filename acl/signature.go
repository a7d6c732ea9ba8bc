package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"slices"
	"unicode/utf16"

	"github.com/samsamq/samsa/protocol"
)

// Ext field names of a signed request.
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
	// FieldUniqueKeyQuery is set by QUERY_MESSAGE on a unique-key lookup;
	// the Java client does not sign it (it is not in the typed header).
	FieldUniqueKeyQuery = "_UNIQUE_KEY_QUERY"
)

// javaLess orders strings as Java's String.compareTo: by UTF-16 code
// units. It differs from Go's byte order only between characters above
// U+FFFF and those in U+E000..U+FFFF.
func javaLess(a, b string) bool {
	if isASCII(a) && isASCII(b) {
		return a < b
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b))) < 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Content is the signed data: the values of ext's fields, minus Signature
// and minus the keys in skip, in Java key order, then body.
func Content(ext map[string]string, body []byte, skip ...string) []byte {
	keys := make([]string, 0, len(ext))
	n := len(body)
	for k, v := range ext {
		if k == FieldSignature || slices.Contains(skip, k) {
			continue
		}
		keys = append(keys, k)
		n += len(v)
	}
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case javaLess(a, b):
			return -1
		}
		return 1
	})
	out := make([]byte, 0, n)
	for _, k := range keys {
		out = append(out, ext[k]...)
	}
	return append(out, body...)
}

// Signature is Base64(HmacSHA1(secretKey, data)).
func Signature(secretKey string, data []byte) string {
	mac := hmac.New(sha1.New, []byte(secretKey))
	mac.Write(data)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign adds AccessKey, SecurityToken (when token is set) and Signature to
// ext as the Java client does (the token signed), and returns ext (a new
// map when ext is nil).
func Sign(ext map[string]string, body []byte, accessKey, secretKey, token string) map[string]string {
	if ext == nil {
		ext = make(map[string]string, 3)
	}
	delete(ext, FieldSignature)
	ext[FieldAccessKey] = accessKey
	if token != "" {
		ext[FieldSecurityToken] = token
	} else {
		delete(ext, FieldSecurityToken)
	}
	ext[FieldSignature] = Signature(secretKey, Content(ext, body))
	return ext
}

// Verify reports whether ext carries a valid Signature for secretKey. It
// accepts the Java client's form (SecurityToken signed, _UNIQUE_KEY_QUERY
// not) and the official Go client's (every field but SecurityToken), and
// the other two combinations: at most four HMACs, one in the common case.
// The comparison is constant-time.
func Verify(ext map[string]string, body []byte, secretKey string) bool {
	got, err := base64.StdEncoding.DecodeString(ext[FieldSignature])
	if err != nil || len(got) != sha1.Size {
		return false
	}
	_, hasToken := ext[FieldSecurityToken]
	_, hasUniq := ext[FieldUniqueKeyQuery]
	ok := false
	try := func(skip ...string) {
		mac := hmac.New(sha1.New, []byte(secretKey))
		mac.Write(Content(ext, body, skip...))
		if hmac.Equal(mac.Sum(nil), got) {
			ok = true
		}
	}
	try()
	if hasToken {
		try(FieldSecurityToken)
	}
	if hasUniq {
		try(FieldUniqueKeyQuery)
		if hasToken {
			try(FieldUniqueKeyQuery, FieldSecurityToken)
		}
	}
	return ok
}

// SignCommand signs a request in place, as Sign: a typed header's fields
// are moved into ExtFields first, so the signature covers every field sent.
// Signing again (a resend) replaces the previous signature.
func SignCommand(cmd *protocol.Command, accessKey, secretKey, token string) {
	if cmd.Header != nil {
		ext := cmd.Header.Encode()
		for k, v := range cmd.ExtFields {
			ext[k] = v
		}
		cmd.ExtFields, cmd.Header = ext, nil
	}
	cmd.ExtFields = Sign(cmd.ExtFields, cmd.Body, accessKey, secretKey, token)
}
