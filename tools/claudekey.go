package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// Claude Code keeps a project's sessions and memory in projects/<key> of its directory,
// the key being the directory it was started in with every character but ASCII letters
// and digits replaced by "-". The key is lossy: /src/a-b, /src/a.b and /src/a/b share
// one folder, and the host's Claude Code loads that folder's memory, and offers its
// sessions to --continue and --resume, in each of them. A sandbox given the folder could
// read the other projects' sessions and plant sessions and memory for them. So the
// folder is shared only while nothing else can be keyed to it (claudeSessions).

// claudeKey returns dir as Claude Code keys it.
func claudeKey(dir string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, dir)
}

const (
	// claudeWalkLimit bounds the directories read looking for another directory
	// with the project's key; past it the answer is "cannot tell", and the folder
	// is not shared.
	claudeWalkLimit = 512
	// claudeSessionLimit bounds the session files read; claudeHead, how much of each.
	claudeSessionLimit = 4096
	claudeHead         = 64 << 10
)

// claudeSessions reports whether the host's projects/key folder of Claude Code's
// directory d may be shared with the sandbox of the project, and when not, why (for
// a warning). It may not when another directory on the host has the same key, when a
// session there records another directory as where it ran (a project since moved or
// deleted, or planted), or when either cannot be told within the limits.
func (h Host) claudeSessions(d place, key string) (bool, string) {
	folder := d.join("projects/" + key).src
	twins, complete := h.keyTwins(key)
	switch {
	case len(twins) > 0:
		return false, fmt.Sprintf("%s is also the folder of %s", folder, strings.Join(twins, ", "))
	case !complete:
		return false, fmt.Sprintf("could not tell whether another directory shares %s (more than %d directories to read)", folder, claudeWalkLimit)
	}
	names := h.entries(folder)
	if len(names) > claudeSessionLimit {
		return false, fmt.Sprintf("%s holds more than %d entries; its sessions were not checked", folder, claudeSessionLimit)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".jsonl") {
			continue
		}
		if cwd := h.sessionCwd(folder + "/" + n); cwd != "" && cwd != h.Project && h.realPath(cwd) != h.Project {
			return false, fmt.Sprintf("%s holds sessions of %s (%s)", folder, cwd, n)
		}
	}
	return true, ""
}

// sessionCwd returns the first "cwd" a session file records, or "" when its first
// claudeHead bytes record none or it cannot be read (a FIFO, a link: ReadHead refuses
// them).
func (h Host) sessionCwd(p string) string {
	if h.ReadHead == nil {
		return ""
	}
	b, err := h.ReadHead(p, claudeHead)
	if err != nil {
		return ""
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var rec struct {
			Cwd string `json:"cwd"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Cwd != "" {
			return rec.Cwd
		}
	}
	return ""
}

// keyTwins returns the directories on the host, other than the project, whose key is
// key, and whether the search was complete. It walks from / into only the entries
// whose own key begins key, so it reads a few directories, not the file system.
func (h Host) keyTwins(key string) (twins []string, complete bool) {
	reads := 0
	var walk func(dir string)
	walk = func(dir string) {
		if reads++; reads > claudeWalkLimit {
			return
		}
		names, err := h.ReadDir(dir)
		if err != nil {
			return
		}
		for _, n := range names {
			p := path.Join(dir, n)
			switch k := claudeKey(p); {
			case k == key:
				if p != h.Project && h.exists(p) && h.isDir(p) {
					twins = append(twins, p)
				}
			case strings.HasPrefix(key, k+"-"):
				walk(p)
			}
		}
	}
	if h.ReadDir == nil {
		return nil, true
	}
	walk("/")
	return twins, reads <= claudeWalkLimit
}

// isDir reports whether p is a directory one can list (a link to one counts too: a
// shell may hand Claude Code its directory through one).
func (h Host) isDir(p string) bool {
	_, err := h.ReadDir(p)
	return err == nil
}
