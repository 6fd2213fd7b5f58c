package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// claudeSessionLimit bounds the session files read. Of each, claudeHeadMin bytes
	// are read first, four times as much while no record tells where it ran, up to
	// claudeHeadMax; claudeReadBudget bounds the bytes read of all of them. Past any
	// of these the answer is "cannot tell".
	claudeSessionLimit = 4096
	claudeHeadMin      = 4 << 10
	claudeHeadMax      = 256 << 10
	claudeReadBudget   = 64 << 20
)

// claudeSessions reports whether the host's projects/key folder of Claude Code's
// directory d may be shared with the sandbox of the project, and when not, why (for
// a warning) and what would make it shareable. It may not when another directory on the host has the same key, when a
// session there records another directory as where it ran (a project since moved or
// deleted, or planted), or when either cannot be told within the limits.
func (h Host) claudeSessions(d place, key string) (ok bool, why, fix string) {
	folder := d.join("projects/" + key).src
	if h.Memo == nil {
		v := h.checkFolder(folder, key)
		return v.ok, v.why, v.fix
	}
	h.Memo.mu.Lock()
	defer h.Memo.mu.Unlock()
	v, done := h.Memo.claude[folder]
	if !done {
		v = h.checkFolder(folder, key)
		h.Memo.claude[folder] = v
	}
	return v.ok, v.why, v.fix
}

// claudeVerdict is claudeSessions' answer for one folder.
type claudeVerdict struct {
	ok       bool
	why, fix string
}

// checkFolder is claudeSessions without the memo.
func (h Host) checkFolder(folder, key string) claudeVerdict {
	twins, complete := h.keyTwins(key)
	switch {
	case len(twins) > 0:
		return claudeVerdict{false, fmt.Sprintf("%s is also the folder of %s", folder, strings.Join(twins, ", ")), moveOut}
	case !complete:
		return claudeVerdict{false, fmt.Sprintf("could not tell whether another directory shares %s (more than %d directories to read)", folder, claudeWalkLimit), moveOut}
	}
	ok, why, fix := h.folderSessions(folder, claudeReadBudget)
	return claudeVerdict{ok, why, fix}
}

const moveOut = "move the other directory's sessions out of that folder (or rename one of the directories)"

// folderSessions reports whether every session file in folder ran in the project,
// reading at most budget bytes of them, and when not, why and the fix.
func (h Host) folderSessions(folder string, budget int) (ok bool, why, fix string) {
	names := h.entries(folder)
	if len(names) > claudeSessionLimit {
		return false, fmt.Sprintf("%s holds more than %d entries; its sessions were not checked", folder, claudeSessionLimit), "move old sessions out of that folder"
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".jsonl") {
			continue
		}
		cwd, err := h.sessionCwd(folder+"/"+n, &budget)
		switch {
		case err != nil:
			return false, fmt.Sprintf("could not tell where the session %s/%s ran: %v", folder, n, err), "review that file and move it out of the folder"
		case cwd != "" && cwd != h.Project && h.realPath(cwd) != h.Project:
			return false, fmt.Sprintf("%s holds sessions of %s (%s)", folder, cwd, n), moveOut
		}
	}
	return true, "", ""
}

// sessionCwd returns the directory the session file p records as where it ran (the
// "cwd" of its first record that has one), or "" when the file holds no conversation
// (nothing, or only records without a "message", such as summaries): nothing in it
// could be continued or read as a session of another directory. It reads the file's
// head, more while no record has told (see claudeHeadMin), and takes what it reads
// from budget. It fails, and the folder is not shared, when it cannot tell: the file
// cannot be read as a regular file (a FIFO, a link: ReadHead refuses them), is not JSON
// lines, holds a conversation that records no directory, or records none within the
// limits.
func (h Host) sessionCwd(p string, budget *int) (string, error) {
	if h.ReadHead == nil {
		return "", errors.New("it cannot be read")
	}
	for n := claudeHeadMin; ; n *= 4 {
		if n > *budget {
			return "", fmt.Errorf("more than %d MiB of session files to read", claudeReadBudget>>20)
		}
		b, err := h.ReadHead(p, n)
		if err != nil {
			return "", fmt.Errorf("it cannot be read as a regular file (%w)", err)
		}
		*budget -= len(b)
		cwd, done, err := firstCwd(b, len(b) < n)
		switch {
		case done:
			return cwd, err
		case n >= claudeHeadMax:
			return "", fmt.Errorf("it records no directory in its first %d KiB", claudeHeadMax>>10)
		}
	}
}

var errNoCwd = errors.New("it holds a conversation that records no directory")

// firstCwd reads the records of b, the head of a session file (all of it when whole),
// up to the first one with a "cwd" (a string) and returns it. done is false when b
// ends before anything could be told and more of the file is there to read. It reads
// only the top-level keys of each record, so a record's message, however long, is
// read only when it comes before its cwd.
func firstCwd(b []byte, whole bool) (cwd string, done bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	conversation := false
	more := func(err error) (string, bool, error) {
		if !whole {
			return "", false, nil
		}
		return "", true, fmt.Errorf("it is not JSON lines (%w)", err)
	}
	for {
		t, err := dec.Token()
		switch {
		case errors.Is(err, io.EOF) && !whole:
			return "", false, nil
		case errors.Is(err, io.EOF) && conversation:
			return "", true, errNoCwd
		case errors.Is(err, io.EOF):
			return "", true, nil
		case err != nil:
			return more(err)
		case t != json.Delim('{'):
			return "", true, fmt.Errorf("it holds %v where a record belongs", t)
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return more(err)
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return more(err)
			}
			switch k {
			case "cwd":
				if json.Unmarshal(v, &cwd) == nil && cwd != "" {
					return cwd, true, nil
				}
			case "message":
				conversation = true
			}
		}
		if _, err := dec.Token(); err != nil {
			return more(err)
		}
	}
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
