package controller

import (
	"fmt"
	"strings"
	"time"
)

// Role is what a reporting broker must be.
type Role int

const (
	RoleNone   Role = iota // the group has no master: the broker must not take writes
	RoleMaster             // the broker is the master of MasterEpoch
	RoleSlave              // the broker follows MasterID
)

func (r Role) String() string {
	switch r {
	case RoleMaster:
		return "master"
	case RoleSlave:
		return "slave"
	}
	return "none"
}

// Result tells the caller what a command changed and what the group looks
// like after it, so it can notify the brokers and the name servers.
type Result struct {
	Group Group
	// Changed: the replicated state of Group changed (brokers and name
	// servers must be told). MasterChanged: the master or its epoch changed.
	Changed       bool
	MasterChanged bool
	MasterID      int64 // NoMaster when the group has none
	MasterAddr    string
	MasterEpoch   int64
	SyncSet       []int64 // sorted
	SyncSetEpoch  int64
	// Role is what the broker that sent the command must be (Register,
	// Heartbeat, Alter); RoleNone for ElectMaster.
	Role Role
	// Fenced: the sender, not the master, reported an epoch older than
	// MasterEpoch (or altered the set without being master): it must stop
	// acting as master, truncate to the consistent point and follow MasterID
	// at MasterEpoch (or, with NoMaster, take no writes). The master itself
	// reporting an older epoch is not fenced: Role master tells it to begin
	// MasterEpoch.
	Fenced bool
	// Unclean: the new master was elected outside the sync-state set
	// (Config.UncleanElection); acknowledged messages may be lost.
	Unclean bool
	// UncleanEpoch is the master epoch of the group's last unclean
	// decision (0: none): a replica may cut acknowledged bytes of a
	// lineage (epoch) older than it to follow the master, and refuses to
	// otherwise.
	UncleanEpoch int64 `json:",omitempty"`
	// Note says in words why nothing changed or what happened.
	Note string
	// MasterSilent, in the answer to a slave's Heartbeat: how long ago the
	// master's last heartbeat reached this controller; -1 when none has
	// since it began leading. A slave that sees its master overdue asks
	// again soon: the answer that elects it may be one heartbeat away.
	// Local liveness, like the heartbeats: not in String, not replicated.
	MasterSilent time.Duration `json:",omitempty"`
}

// String is stable, for the script tests and logs.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", r.Group)
	if r.MasterID == NoMaster {
		fmt.Fprintf(&b, "master=none epoch=%d", r.MasterEpoch)
	} else {
		fmt.Fprintf(&b, "master=%d(%s) epoch=%d", r.MasterID, r.MasterAddr, r.MasterEpoch)
	}
	fmt.Fprintf(&b, " sync=%s setEpoch=%d", formatIDs(r.SyncSet), r.SyncSetEpoch)
	if r.UncleanEpoch > 0 {
		fmt.Fprintf(&b, " uncleanEpoch=%d", r.UncleanEpoch)
	}
	var flags []string
	if r.Changed {
		flags = append(flags, "changed")
	}
	if r.MasterChanged {
		flags = append(flags, "master-changed")
	}
	if r.Role != RoleNone {
		flags = append(flags, "role="+r.Role.String())
	}
	if r.Fenced {
		flags = append(flags, "FENCED")
	}
	if r.Unclean {
		flags = append(flags, "UNCLEAN")
	}
	if len(flags) > 0 {
		b.WriteString(" [" + strings.Join(flags, " ") + "]")
	}
	if r.Note != "" {
		b.WriteString(" -- " + r.Note)
	}
	return b.String()
}

func formatIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "{" + strings.Join(s, ",") + "}"
}
