package protocol

// GET_ALL_TOPIC_CONFIG in pages: a Samsa extension a slave uses to copy a
// topic table larger than a frame (RocketMQ's answer is the whole table in
// one frame, about 50,000 topics at most; RocketMQ 5 added a
// GetAllTopicConfigRequestHeader of topicSeq, dataVersion and maxTopicNum
// for the same purpose, counting pages by number). A request that carries
// samsaPageBytes is answered in pages of at most that many body bytes,
// topics in name order, each page after the name the previous one ended
// at: a cursor by name stays right while topics come and go between
// pages, where a page number would skip or repeat some. A request without
// it is answered as RocketMQ answers, the whole table or an error when it
// does not fit.
//
// A request may also carry samsaSince, the change cursor (Seq) of the
// last answer its sender applied: when the broker still holds every
// change since, it answers only those (Kind "delta": the changed topics'
// configs and the deleted topics' names), and nothing when nothing
// changed. Otherwise, or when dataVersion differs from the broker's, it
// answers the first page (Kind "page"); when dataVersion equals the
// broker's it answers an empty delta (the sender's table is the
// broker's).
//
// Request fields:
//
//	| field          | meaning                                                 |
//	|----------------|---------------------------------------------------------|
//	| samsaPageBytes | the largest body wanted; the broker clamps it to        |
//	|                | [MinTopicPageBytes, its frame limit]                    |
//	| samsaAfter     | the page starts after this name ("" or absent: first)   |
//	|                | and the request asks for that page, never a delta        |
//	| samsaSince     | a Seq from an earlier answer                             |
//	| dataVersion    | the sender's DataVersion as JSON                         |
//
// Answer fields: totalTopicNum, samsaKind ("page" or "delta"), samsaMore
// ("true": ask again with samsaAfter = samsaNext), samsaNext, samsaSeq
// (the change cursor the answer is as of; a copy made of pages is as of
// its first page's, and the delta since then brings it up to date).

// Ext-field names of the paged GET_ALL_TOPIC_CONFIG.
const (
	TopicPageBytesField = "samsaPageBytes"
	TopicPageAfterField = "samsaAfter"
	TopicPageSinceField = "samsaSince"
	TopicPageDVField    = "dataVersion"
)

// MinTopicPageBytes is the smallest page the broker answers (a page holds
// at least one topic whatever the request says).
const MinTopicPageBytes = 64 << 10

// Kinds of a paged GET_ALL_TOPIC_CONFIG's answer.
const (
	TopicPageKindPage  = "page"
	TopicPageKindDelta = "delta"
)

// TopicPageRequestHeader is the paged GET_ALL_TOPIC_CONFIG's request.
type TopicPageRequestHeader struct {
	MaxBytes    int32
	After       string
	HasAfter    bool // After was sent (a page is asked for)
	Since       string
	DataVersion string // JSON; "" when not sent
}

func (h *TopicPageRequestHeader) Encode() map[string]string {
	w := newFields(4)
	w.i32(TopicPageBytesField, h.MaxBytes)
	if h.HasAfter {
		w.str(TopicPageAfterField, h.After)
	}
	w.optStr(TopicPageSinceField, h.Since)
	w.optStr(TopicPageDVField, h.DataVersion)
	return w
}

func (h *TopicPageRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.MaxBytes = r.i32(TopicPageBytesField, true)
	h.HasAfter = r.has(TopicPageAfterField)
	h.After = r.str(TopicPageAfterField)
	h.Since = r.str(TopicPageSinceField)
	h.DataVersion = r.str(TopicPageDVField)
	return r.err()
}

// TopicPageResponseHeader answers the paged GET_ALL_TOPIC_CONFIG.
type TopicPageResponseHeader struct {
	TotalTopicNum int32
	Kind          string
	More          bool
	Next          string
	Seq           string
}

func (h *TopicPageResponseHeader) Encode() map[string]string {
	w := newFields(5)
	w.i32("totalTopicNum", h.TotalTopicNum)
	w.str("samsaKind", h.Kind)
	w.boolean("samsaMore", h.More)
	w.optStr("samsaNext", h.Next)
	w.str("samsaSeq", h.Seq)
	return w
}

func (h *TopicPageResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.TotalTopicNum = r.i32("totalTopicNum", false)
	h.Kind = r.reqStr("samsaKind")
	h.More = r.boolean("samsaMore")
	h.Next = r.str("samsaNext")
	h.Seq = r.reqStr("samsaSeq")
	if h.Kind != TopicPageKindPage && h.Kind != TopicPageKindDelta {
		r.fail("samsaKind", "want page or delta, got "+h.Kind)
	}
	return r.err()
}

// TopicConfigPage is the paged GET_ALL_TOPIC_CONFIG's body: a
// TopicConfigSerializeWrapper's fields (a page's topics, or a delta's
// changed ones) and, in a delta, the topics deleted since.
type TopicConfigPage struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DeletedTopics    []string               `json:"deletedTopics,omitempty"`
	DataVersion      DataVersion            `json:"dataVersion"`
}
