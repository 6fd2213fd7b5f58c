package tools

// cursorState is what Cursor's CLI (cursor-agent) writes in ~/.cursor, all of it the
// sandbox's own: chats, transcripts (projects/), and
// cli-config.json, which holds its permission rules (the commands and tools it may
// run unasked) beside its sign-in, so a sandbox that shared it could widen the
// host's permissions.
func cursorState() []State {
	st := []State{{Path: "cli-config.json"}}
	for _, d := range []string{"chats", "projects"} {
		st = append(st, State{Path: d, Dir: true})
	}
	return st
}

// cursorConfigState is what it writes in ~/.config/cursor (XDG): chat stores, prompt
// history and, in older versions, its sign-in (auth.json), the sandbox's own.
func cursorConfigState() []State {
	return []State{{Path: "chats", Dir: true}, {Path: "prompt_history.json"}, {Path: "auth.json"}}
}

// Cursor exposes Cursor's CLI agent. ~/.cursor (CURSOR_CONFIG_DIR) is shared with the
// Cursor editor: its extensions, MCP servers (mcp.json), hooks (hooks.json), rules,
// commands and skills are the host's, read-only; the CLI's state is the sandbox's
// own copy (see ownDir), and so is ~/.config/cursor's. A sign-in does not carry into
// the sandbox: pass CURSOR_API_KEY. The install (~/.local/share/cursor-agent, linked
// from ~/.local/bin as cursor-agent and agent) is read-only.
func Cursor() Tool {
	return Tool{
		Name:        "cursor",
		Description: "Cursor CLI (cursor-agent): ~/.cursor read-only but the CLI's state (the sandbox's own); install read-only",
		Detect: func(h Host) bool {
			// ~/.cursor alone may be the editor's: the CLI writes cli-config.json.
			return h.onPath("cursor-agent") || h.exists(cursorDir(h).src+"/cli-config.json") ||
				h.Env["CURSOR_CONFIG_DIR"] != "" && h.exists(cursorDir(h).src)
		},
		Bindings: func(h Host) []Binding {
			bs := h.ownDir(cursorDir(h), cursorState()...)
			bs = append(bs, h.ownDir(h.config("cursor"), cursorConfigState()...)...)
			bs = append(bs, h.data("cursor-agent").bind(RO))
			return h.withExecutables(bs, "cursor-agent", "agent")
		},
		Env:     []string{"CURSOR_CONFIG_DIR", "NO_OPEN_BROWSER"},
		Secrets: []string{"CURSOR_API_KEY"},
		Egress:  []string{"cursor.com", "*.cursor.com", "*.cursor.sh"},
	}
}

func cursorDir(h Host) place { return h.envPlace("CURSOR_CONFIG_DIR", h.home(".cursor")) }
