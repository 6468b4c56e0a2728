// Processes a child leaves behind (a fork that sleeps, a `setsid` daemon): as a child subreaper,
// venvtx inherits every orphan of its children and can kill them all once a child has exited.
#pragma once

namespace venvtx {

// Makes this process the reaper of its descendants' orphans (PR_SET_CHILD_SUBREAPER).
void become_subreaper();

// Kills and reaps every process now parented to this one, repeatedly, until none is left
// (killing one reparents its own children here). Call only with no child to keep.
void kill_orphaned_descendants();

} // namespace venvtx
