// Package acl is Samsa's RocketMQ 4.x-compatible access control: the
// request signature RocketMQ clients send, the plain_acl.yml accounts file,
// white-remote-address patterns, the map from a request code to the topics
// and groups it touches, and the decision whether an account may do it.
//
// Signature. A signed request carries the ext fields AccessKey, Signature
// and, optionally, SecurityToken. Signature is
//
//	Base64(HmacSHA1(secretKey, values ++ body))
//
// where values is the concatenation (UTF-8) of the values of every ext
// field but Signature, in the order of their keys as Java sorts strings
// (UTF-16 code units). The Java client leaves _UNIQUE_KEY_QUERY out (it
// signs the typed header only) and signs SecurityToken; the official Go
// client signs every ext field it has but leaves SecurityToken out. Verify
// accepts each of these forms and compares in constant time.
//
// Decisions follow RocketMQ's PlainPermissionManager.validate: an address
// in globalWhiteRemoteAddresses, or in the account's own
// whiteRemoteAddress, passes without further checks; otherwise the request
// must name a known account and carry its signature, admin codes need
// admin: true, and each topic or group resource the request touches must
// be allowed by the account's topicPerms/groupPerms or else its
// defaultTopicPerm/defaultGroupPerm. A group is the resource %RETRY%group,
// so a pull from a retry topic is checked against the group's permission.
//
// Concurrency: a Config is immutable once parsed; a Store swaps Configs
// atomically, so Check may run on any number of goroutines while the file
// reloads.
package acl
