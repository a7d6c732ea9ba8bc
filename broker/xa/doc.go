// Package xa makes the broker an XA resource manager (X/Open XA's verbs
// over remoting): a branch, named by an XID, gathers half messages
// (package txn) sent while it is active; prepare makes it durable;
// commit or rollback settles its halves in one txn.End; recover lists the
// prepared branches.
//
// # Model
//
// The client starts a branch (Start), sends its messages as half
// messages carrying the property SAMSA_XID (the XID's String) and the
// producer group Group, ends the branch (End) listing the halves it
// stored, then prepares it (Prepare) and later commits or rolls it back.
// Commit with onePhase skips the prepare. The manager checks at End that
// every listed half carries this XID; a branch with no halves prepares as
// read-only (RDONLY) and is forgotten.
//
// A branch that is started or ended but not prepared lives in memory: a
// restart forgets it and its halves are no longer held, so the check-back
// of package txn (no producer of Group ever answers) discards them after
// its rounds: presumed abort, as XA allows before prepare. One left
// unprepared longer than Config.ActiveTimeout is rolled back by Sweep.
//
// A prepared branch is durable: Prepare writes its prepare record to the
// log (Config.Log, below) and waits until the log is flushed to it (so its
// halves, before it, are on disk too; without a Log, Config.Sync flushes
// the log up to what is written), then saves every prepared branch to
// ConfigDir/xaPrepared.json (written atomically, like the
// broker's other config files). Its halves stay open and invisible;
// txn's check-back leaves them alone (Holds, txn.Config.Hold). Only Commit
// or Rollback ends it; a branch prepared longer than Config.LongPrepared
// is counted and logged by Sweep, never decided. The manager makes no
// heuristic decision, so Forget of a known branch is a protocol error.
//
// Unlike the broker's other files, xaPrepared.json is loaded strictly: a
// file that does not decode stops Open with an error rather than being set
// aside, since setting it aside would decide its branches silently.
//
// # Log
//
// The log, not the file, is the source of truth: the file is this node's
// and is not replicated, the log is. Branch records are CommitLog records
// of LogTopic queue 0 (tag 'P', 'C' or 'R'; layout at Record.Encode): a
// prepare record (the XID, when, the halves) is stored before Prepare
// answers XA_OK, as durably as a send is acknowledged (flushed; on a
// SYNC_MASTER held by the slaves the controller counts), so a replica that
// holds it holds the halves before it too. Commit and rollback of a branch
// with a prepare record add a decision record after the settlement, so a
// replica with the decision has the settlement as well; it is not waited
// for (see below). Forget writes
// nothing: the manager never decides a branch on its own.
//
// A floor record (tag 'F') bounds the reading: Sweep, on a master,
// writes one when the floor moved, the LogTopic queue offset of the
// lowest prepare record of a branch it still knows (or the log's end when
// it knows none), so every branch that can still be prepared has its
// prepare record at or above it. A decision written later for a branch
// below it is only ignored. No floor is computed while a prepare record is
// being appended (its offset is not yet known), and each branch is
// dropped only after its decision record is stored. A replay reads back
// from the log's end to the last floor record and forward from its floor:
// what it reads is bounded by the records since about the oldest prepared
// branch, not by the CommitLog's retention.
//
// Open reads the file, then the records (Replay): a branch the records
// prepare is prepared, one they decide is gone, one only the file lists
// (prepared before the log held records) stays. Resync, called when a
// replica is promoted to master, rebuilds every branch from the records
// alone. A prepare record whose write failed (no slave acknowledged it in
// time: XAER_RMFAIL to the caller) may still be in the log: such a branch
// comes back prepared after a restart or a fail-over, where the
// coordinator, having seen prepare fail, rolls it back (presumed abort).
// A lost decision record leaves a settled branch listed: committing or
// rolling it back again writes nothing (txn.ErrSettled) and answers OK.
//
// # File
//
//	{"branches": [{"xid": "<formatId>.<gtrid hex>.<bqual hex>",
//	  "preparedAtMs": <unix ms>, "halves": [[<half queue offset>, <commit-log offset>], ...]}]}
//
// # Commit after a crash
//
// Commit settles the halves (txn.End) and then drops the branch from the
// file; a crash between the two leaves the branch listed as prepared, and
// the commit that follows recovery finds its halves settled
// (txn.ErrSettled) and answers OK. A crash in the middle of the
// settlement's write is completed by txn (its "Crash mid-commit").
//
// # Concurrency
//
// Every method is safe for concurrent use. A branch being prepared,
// committed or rolled back is busy: another verb on it meanwhile gets
// XAER_RMFAIL (try again), so a branch is settled once.
package xa
