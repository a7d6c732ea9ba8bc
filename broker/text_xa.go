package broker

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/broker/xa"
	"github.com/samsamq/samsa/protocol/metaq"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// MetaQ's XA transactions on the text protocol, mapped onto the broker's
// XA branches (package broker/xa). MetaQ names a branch by the key
// "XID:<formatId>:<gtrid hex>:<bqual hex>:<uniqueQualifier>" (the last
// names the resource manager; the broker keeps no use of it). The types:
//
//	BEGIN             xa.Start: the connection's puts with this key are the branch's
//	END               xa.End, listing the puts stored
//	PREPARE           xa.Prepare; the result's body is the XA code (0 XA_OK, 3 XA_RDONLY)
//	COMMIT_ONE_PHASE  xa.Commit one-phase (ending the branch first if needed)
//	COMMIT_TWO_PHASE  xa.Commit of a prepared branch
//	ROLLBACK          xa.Rollback (ending the branch first if needed)
//	RECOVER           the prepared branches, one key a line ("\r\n") in the body,
//	                  each with the RECOVER command's qualifier (else its key's)
//	FORGET            xa.Forget (no heuristic decisions: XAER_NOTA or XAER_PROTO)
//
// An XA error answers 500 with "XAER_...(code): reason". A connection
// that ends with a branch still active ends it with TMFAIL: the broker's
// sweep rolls it back.

// metaqXID reads an XA transaction key; ok is false when key is not one
// (a local "TX:..." transaction).
func metaqXID(key string) (x xa.XID, ok bool, err error) {
	rest, found := strings.CutPrefix(key, "XID:")
	if !found {
		return xa.XID{}, false, nil
	}
	f := strings.Split(rest, ":")
	if len(f) != 3 && len(f) != 4 {
		return xa.XID{}, true, fmt.Errorf("XA transaction key %q: want XID:<formatId>:<gtrid hex>:<bqual hex>:<qualifier>", key)
	}
	fid, err1 := strconv.ParseInt(f[0], 10, 32)
	g, err2 := hex.DecodeString(f[1])
	q, err3 := hex.DecodeString(f[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return xa.XID{}, true, fmt.Errorf("XA transaction key %q: %w", key, err)
	}
	x = xa.XID{FormatID: int32(fid), GTRID: g, BQUAL: q}
	if err := x.Validate(); err != nil {
		return xa.XID{}, true, fmt.Errorf("XA transaction key %q: %w", key, err)
	}
	return x, true, nil
}

// xaHalf marks m as a half message of branch x (before txn.ToHalf).
func xaHalf(m *storage.Message, x xa.XID) {
	props := make([]byte, 0, len(m.Properties)+96)
	props = append(props, m.Properties...)
	if n := len(props); n > 0 && props[n-1] != record.PropertySeparator {
		props = append(props, record.PropertySeparator)
	}
	props = record.AppendProperty(props, txn.PropProducerGroup, xa.Group)
	props = record.AppendProperty(props, xa.PropXID, x.String())
	m.Properties = props
}

// xaTransaction answers a transaction command on an XA key; false to end
// the connection. The reader alone touches t.txs.
func (t *textConn) xaTransaction(cmd *metaq.Command, x xa.XID, keyErr error) bool {
	answerErr := func(err error) {
		var e *xa.Error
		msg := err.Error()
		if errors.As(err, &e) {
			msg = fmt.Sprintf("%s(%d): %s", xa.CodeName(e.Code), e.Code, e.Msg)
		}
		t.answer(metaq.AppendResult(nil, metaq.InternalServerError, msg, cmd.Opaque), nil)
	}
	if keyErr != nil {
		t.answer(metaq.AppendResult(nil, metaq.BadRequest, keyErr.Error(), cmd.Opaque), nil)
		return true
	}
	m := t.c.b.xa
	if m == nil {
		t.answer(metaq.AppendResult(nil, metaq.ServiceUnavailable, "this broker holds no XA branches (a slave)", cmd.Opaque), nil)
		return true
	}
	// end ends the branch's association on this connection, if it has one.
	end := func(flags int) error {
		tx := t.txs[cmd.TxKey]
		if tx == nil {
			return nil
		}
		delete(t.txs, cmd.TxKey)
		tx.puts.Wait()
		return m.End(x, tx.ordered(), flags)
	}
	ok := func(body string) {
		t.answer(metaq.AppendResult(nil, metaq.Success, body, cmd.Opaque), nil)
	}
	switch cmd.TxType {
	case "BEGIN":
		if t.txs[cmd.TxKey] != nil {
			t.answer(metaq.AppendResult(nil, metaq.BadRequest, "transaction "+cmd.TxKey+" is begun already", cmd.Opaque), nil)
			return true
		}
		if err := m.Start(x, xa.TMNOFLAGS); err != nil {
			answerErr(err)
			return true
		}
		t.txs[cmd.TxKey] = &textTx{refs: make(map[int]txn.Ref), xid: &x}
		ok("")
		return true
	case "END":
		if err := end(xa.TMSUCCESS); err != nil {
			answerErr(err)
			return true
		}
		ok("")
		return true
	case "RECOVER":
		q := cmd.Qualifier // the resource manager's name: the command's, else its key's
		if f := strings.Split(cmd.TxKey, ":"); q == "" && len(f) == 5 {
			q = f[4]
		}
		var b strings.Builder
		for i, br := range m.Recover() {
			if i > 0 {
				b.WriteString("\r\n")
			}
			fmt.Fprintf(&b, "XID:%d:%x:%x:%s", br.XID.FormatID, br.XID.GTRID, br.XID.BQUAL, q)
		}
		ok(b.String())
		return true
	case "FORGET":
		answerErr(m.Forget(x))
		return true
	}
	// PREPARE, COMMIT_ONE_PHASE, COMMIT_TWO_PHASE, ROLLBACK: may flush or
	// write; off the reader.
	var pending *textTx
	if tx := t.txs[cmd.TxKey]; tx != nil && cmd.TxType != "PREPARE" && cmd.TxType != "COMMIT_TWO_PHASE" {
		pending = tx
		delete(t.txs, cmd.TxKey)
	}
	return t.run(cmd, func() ([]byte, []byte) {
		if pending != nil {
			pending.puts.Wait()
			flags := xa.TMSUCCESS
			if cmd.TxType == "ROLLBACK" {
				flags = xa.TMFAIL
			}
			if err := m.End(x, pending.ordered(), flags); err != nil {
				return xaText(cmd, 0, err), nil
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.c.b.cfg.SyncFlushTimeout+time.Second)
		defer cancel()
		var code int
		var err error
		switch cmd.TxType {
		case "PREPARE":
			code, err = m.Prepare(ctx, x)
		case "COMMIT_ONE_PHASE":
			err = m.Commit(ctx, x, true)
		case "COMMIT_TWO_PHASE":
			err = m.Commit(ctx, x, false)
		case "ROLLBACK":
			err = m.Rollback(ctx, x)
		}
		return xaText(cmd, code, err), nil
	})
}

// xaText is an XA verb's text answer: 200 with the XA code as its body
// for PREPARE, else 500 with the XA error.
func xaText(cmd *metaq.Command, code int, err error) []byte {
	if err != nil {
		var e *xa.Error
		msg := err.Error()
		if errors.As(err, &e) {
			msg = fmt.Sprintf("%s(%d): %s", xa.CodeName(e.Code), e.Code, e.Msg)
		}
		return metaq.AppendResult(nil, metaq.InternalServerError, msg, cmd.Opaque)
	}
	body := ""
	if cmd.TxType == "PREPARE" {
		body = strconv.Itoa(code)
	}
	return metaq.AppendResult(nil, metaq.Success, body, cmd.Opaque)
}
