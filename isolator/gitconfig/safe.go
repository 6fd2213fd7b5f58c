package gitconfig

import (
	"strings"
)

// Checker decides which variables a sandbox may have written into a configuration the
// host's git reads. Only variables that ordinary git work writes (init, clone, commit,
// branch, remote, submodule, worktree, sparse-checkout, gc) and that name no program,
// hook, include, filter or URL rewrite are safe; everything else (core.fsmonitor,
// core.hooksPath, core.sshCommand, alias.*, include.path, filter.*, credential.*,
// url.*.insteadOf, ...) is not, whatever its value.
type Checker struct {
	// Worktree reports whether a core.worktree value (relative to the git dir, or
	// absolute) names a directory git may use: one inside the project.
	Worktree func(value string) bool
}

// safeKeys are the safe variables, "*" standing for any subsection, and a check of
// the value where one applies.
var safeKeys = map[string]func(c Checker, v string) bool{
	"core.repositoryformatversion": nil, "core.filemode": nil, "core.bare": nil,
	"core.logallrefupdates": nil, "core.ignorecase": nil, "core.precomposeunicode": nil,
	"core.symlinks": nil, "core.autocrlf": nil, "core.eol": nil, "core.safecrlf": nil,
	"core.sparsecheckout": nil, "core.sparsecheckoutcone": nil, "core.quotepath": nil,
	"core.abbrev": nil, "core.compression": nil, "core.loosecompression": nil,
	"core.bigfilethreshold": nil, "core.checkstat": nil, "core.trustctime": nil,
	"core.splitindex": nil, "core.untrackedcache": nil, "core.commentchar": nil,
	"core.warnambiguousrefs": nil, "core.preloadindex": nil, "core.multipackindex": nil,
	"core.commitgraph": nil,
	"core.worktree":    func(c Checker, v string) bool { return c.Worktree != nil && c.Worktree(v) },

	"extensions.objectformat": nil, "extensions.worktreeconfig": nil, "extensions.preciousobjects": nil,
	"extensions.partialclone": nil, "extensions.refstorage": nil,

	"remote.*.url": safeURL, "remote.*.pushurl": safeURL, "remote.*.fetch": nil, "remote.*.push": nil,
	"remote.*.mirror": nil, "remote.*.tagopt": nil, "remote.*.prune": nil, "remote.*.prunetags": nil,
	"remote.*.promisor": nil, "remote.*.partialclonefilter": nil, "remote.*.skipdefaultupdate": nil,
	"remote.*.skipfetchall": nil,

	"branch.*.remote": nil, "branch.*.merge": nil, "branch.*.rebase": nil, "branch.*.pushremote": nil,
	"branch.*.description": nil,

	"submodule.*.url": safeURL, "submodule.*.active": nil, "submodule.*.branch": nil,
	"submodule.*.fetchrecursesubmodules": nil, "submodule.*.ignore": nil, "submodule.*.shallow": nil,
	"submodule.active": nil,
	// "!command" runs a command on update; only these name git's own strategies.
	"submodule.*.update": func(_ Checker, v string) bool {
		switch strings.ToLower(v) {
		case "checkout", "rebase", "merge", "none":
			return true
		}
		return false
	},

	"user.name": nil, "user.email": nil, "init.defaultbranch": nil,
	"gc.auto": nil, "gc.autopacklimit": nil, "gc.autodetach": nil, "gc.writecommitgraph": nil,
	"fetch.prune": nil, "fetch.writecommitgraph": nil, "pull.rebase": nil, "pull.ff": nil,
	"push.default": nil, "push.autosetupremote": nil, "index.version": nil, "index.sparse": nil,
	"feature.manyfiles": nil, "feature.experimental": nil, "maintenance.auto": nil,
	"maintenance.strategy": nil, "lfs.repositoryformatversion": nil, "protocol.version": nil,
	"rerere.enabled": nil, "merge.conflictstyle": nil,
}

// safeURL refuses the transports that run a command (ext::) or read a descriptor
// (fd::), and values git could take for an option.
func safeURL(_ Checker, v string) bool {
	l := strings.ToLower(strings.TrimSpace(v))
	return !strings.HasPrefix(l, "ext::") && !strings.HasPrefix(l, "fd::") && !strings.HasPrefix(l, "-")
}

// Safe reports whether e may come from a file the sandbox wrote.
func (c Checker) Safe(e Entry) bool {
	key := e.Section + "." + e.Name
	if e.Sub != "" {
		key = e.Section + ".*." + e.Name
	}
	check, ok := safeKeys[key]
	if !ok {
		return false
	}
	v := e.Value
	if e.Bool {
		v = "true"
	}
	return check == nil || check(c, v)
}

// Unsafe returns the entries of now that were not in before (counting repeats) and are
// not safe: what a sandbox added or changed that the host's git must not obey.
// Removed entries are fine.
func (c Checker) Unsafe(before, now []Entry) []Entry {
	seen := map[Entry]int{}
	for _, e := range before {
		seen[e]++
	}
	var out []Entry
	for _, e := range now {
		if seen[e] > 0 {
			seen[e]--
			continue
		}
		if !c.Safe(e) {
			out = append(out, e)
		}
	}
	return out
}
