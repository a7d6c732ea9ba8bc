package record

import "unicode/utf8"

// TagsCode is RocketMQ's consume-queue tag hash
// (MessageExtBrokerInner.tagsString2tagsCode): 0 for no tags, else Java's
// String.hashCode of the tags string (s[0]*31^(n-1) + ... + s[n-1] over
// its UTF-16 code units, in 32-bit arithmetic) widened to int64 with its
// sign.
func TagsCode(tags string) int64 { return javaHash(tags, utf8.DecodeRuneInString) }

// TagsCodeBytes is TagsCode of tags given as bytes, without allocating.
func TagsCodeBytes(tags []byte) int64 { return javaHash(tags, utf8.DecodeRune) }

// javaHash is Java's String.hashCode of UTF-8 text (an invalid byte counts
// as U+FFFD, as Java's decoder replaces it).
func javaHash[T string | []byte](s T, decode func(T) (rune, int)) int64 {
	var h int32
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, n := decode(s[i:])
		i += n
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return int64(h)
}

// TagsCodeOf returns the TagsCode of the TAGS property in props (0 when
// there is none).
func TagsCodeOf(props []byte) int64 {
	if v, ok := LookupProperty(props, PropertyTags); ok {
		return TagsCodeBytes(v)
	}
	return 0
}
