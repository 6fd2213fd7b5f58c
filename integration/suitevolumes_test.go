//go:build integration

package integration

import "regexp"

// A run's session endpoint volume (devsandbox-<project>-ep-<session>: the sockets a
// docker sandbox shares with its session's companion) is the run's own: the run
// removes it once its containers are gone, and a run that could not (devsandbox
// killed) leaves it labelled for the next run's sweep. One CI run after another left
// one such volume in the local engine, with no label: made by the engine itself for a
// sandbox container created after the companion's failure had removed the volume
// (isolator/docker: pendingCompanion). No test's runs are left to a later sweep, so
// the suite fails when it ends with a session endpoint volume the engines did not
// have when it started, and removes it: suiteLeftovers' check of every volume, which
// names such a volume as one.

// sessionVolume matches the name of a run's session endpoint volume (a kept
// container's, devsandbox-<project>-ep, is the project's and stays with it).
var sessionVolume = regexp.MustCompile(`^devsandbox-.+-ep-[0-9a-f]+$`)
