// Package ctlrole is what a broker replica decides in controller mode, as
// plain functions of what it knows: the replication (ha) epoch it opens
// when the controller makes it master, the Position it reports for
// elections, the offset its group confirmed, the sync-state set it asks
// for as master, and whether it may cut acknowledged bytes to follow a new
// master. Package broker runs them against its store and its ha link;
// package sim runs the same functions against simulated replicas, so the
// simulator checks the broker's rules, not a copy of them.
//
// Every function is pure or touches only the maps it is given; none is
// safe for concurrent use on the same maps.
package ctlrole
