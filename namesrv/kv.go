package namesrv

// PutKV sets a KV config value (PUT_KV_CONFIG). The table lives in memory:
// Samsa's name server, like every RocketMQ name server, shares nothing, and
// brokers re-register their state every 30 s. A put past a bound
// (limits.go) fails, wrapping ErrLimit, and stores nothing.
func (t *RouteTable) PutKV(namespace, key, value string) error {
	if err := t.checkKV(namespace, key, value); err != nil {
		return err
	}
	ns := t.kv[namespace]
	if ns == nil {
		ns = map[string]string{}
		t.kv[namespace] = ns
	}
	grow := kvEntryLen(key, value)
	if old, ok := ns[key]; ok {
		grow -= kvEntryLen(key, old)
	}
	ns[key] = value
	t.kvBytes[namespace] += grow
	t.kvTotal += grow
	return nil
}

// GetKV reads a KV config value (GET_KV_CONFIG).
func (t *RouteTable) GetKV(namespace, key string) (string, bool) {
	v, ok := t.kv[namespace][key]
	return v, ok
}

// DeleteKV removes a KV config value (DELETE_KV_CONFIG).
func (t *RouteTable) DeleteKV(namespace, key string) {
	if ns := t.kv[namespace]; ns != nil {
		if old, ok := ns[key]; ok {
			t.kvBytes[namespace] -= kvEntryLen(key, old)
			t.kvTotal -= kvEntryLen(key, old)
		}
		delete(ns, key)
		if len(ns) == 0 {
			delete(t.kv, namespace)
			delete(t.kvBytes, namespace)
		}
	}
}

// KVList copies a namespace's table (GET_KVLIST_BY_NAMESPACE, and the body
// of REGISTER_BROKER's answer for ORDER_TOPIC_CONFIG); false when empty.
func (t *RouteTable) KVList(namespace string) (map[string]string, bool) {
	ns := t.kv[namespace]
	if len(ns) == 0 {
		return nil, false
	}
	out := make(map[string]string, len(ns))
	for k, v := range ns {
		out[k] = v
	}
	return out, true
}
