// Package xa is a small two-phase commit coordinator: one global
// transaction over a PostgreSQL branch (PREPARE TRANSACTION, COMMIT
// PREPARED, ROLLBACK PREPARED) and a Samsa branch (client.XAResource),
// with a coordinator log, so that the database row and the message
// appear together or not at all, whichever process crashes when.
//
// # Protocol (presumed abort)
//
// Run begins the database transaction and starts the Samsa branch, runs
// the application's work with both, ends the Samsa branch, prepares the
// database branch, then the Samsa branch. Once both are prepared it
// writes the commit decision to its log and syncs it: that write is the
// commit point. Then it commits both and logs that they are done. A
// failure before the decision rolls both back; after it, Run keeps
// committing (the decision stands) and Recover finishes what a crash left.
//
// Recover, run when a coordinator starts, asks every resource for its
// prepared branches of this coordinator (format id FormatID, the
// coordinator's Name in the global id) and commits those whose global
// transaction has a logged decision, rolls back the others; then it marks
// the logged decisions done. A branch not yet prepared at the crash is
// rolled back by its resource manager itself: PostgreSQL when the
// connection drops, the broker after its activeTimeout (XA allows either
// to decide an unprepared branch).
//
// # Log
//
// One file of lines "commit <gtrid hex>" and "done <gtrid hex>", appended
// and fsynced (commit) or appended (done: losing it only means a branch
// is committed twice, which both resources answer as done). Recover
// rewrites it with only the decisions not done.
//
// # Crash points
//
// Options.Step is called before each step with its name (Steps lists
// them); an error from it stops Run at once, as a crash would, leaving
// everything as it is: tests abort a coordinator at step N and start a
// new one from the same log.
package xa
