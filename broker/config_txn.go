package broker

import (
	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/broker/xa"
)

// Transaction defaults (RocketMQ's BrokerConfig; package txn).
const (
	DefaultTransactionTimeout       = txn.DefaultTimeout
	DefaultTransactionCheckInterval = txn.DefaultCheckInterval
	DefaultTransactionCheckMax      = txn.DefaultCheckMax
)

// ensureTxnDefaults fills the transaction settings.
func (c *Config) ensureTxnDefaults() {
	setDur(&c.TransactionTimeout, DefaultTransactionTimeout)
	setDur(&c.TransactionCheckInterval, DefaultTransactionCheckInterval)
	setInt(&c.TransactionCheckMax, DefaultTransactionCheckMax)
	setDur(&c.XAActiveTimeout, xa.DefaultActiveTimeout)
	setDur(&c.XALongPrepared, xa.DefaultLongPrepared)
}

// validateTxn checks the transaction settings.
func (c *Config) validateTxn(bad func(format string, a ...any)) {
	if c.TransactionTimeout <= 0 {
		bad("transactionTimeOut %v must be positive", c.TransactionTimeout)
	}
	if c.TransactionCheckInterval <= 0 {
		bad("transactionCheckInterval %v must be positive", c.TransactionCheckInterval)
	}
	if c.XAActiveTimeout <= 0 {
		bad("xaActiveTimeout %v must be positive", c.XAActiveTimeout)
	}
	if c.XALongPrepared <= 0 {
		bad("xaLongPrepared %v must be positive", c.XALongPrepared)
	}
	if c.TransactionCheckMax < 1 {
		bad("transactionCheckMax %d must be at least 1", c.TransactionCheckMax)
	}
}
