package tools

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/pelletier/go-toml/v2"
)

// Setting is a top-level string key of a TOML file in a tool's directory on the
// host: where a tool reads a value it takes from no variable (Codex's openai_base_url
// in $CODEX_HOME/config.toml, else ~/.codex/config.toml).
type Setting struct {
	DirEnv string // the variable naming the directory (CODEX_HOME), as the tool's Env passes it
	Dir    string // the directory, relative to the home, when DirEnv is not set (.codex)
	File   string // the file in it (config.toml)
	Key    string
}

// Path is where s's file is on h.
func (s Setting) Path(h Host) string {
	return h.envPlace(s.DirEnv, h.home(s.Dir)).join(s.File).src
}

// settingMax bounds the bytes of a file read for a Setting.
const settingMax = 1 << 20

// ErrSetting is the class of errors for a Setting that cannot be read: the file is
// not a regular file the sandbox cannot write, is too large, does not parse, or holds
// something other than a string under the key.
var ErrSetting = errors.New("setting cannot be read")

// Read returns the value of s on h and the file it came from; "" when the file does
// not exist or does not set the key. A file that resolves into the project is not
// read: the sandbox can write it, and what it says would then steer where the host
// sends secrets. It reads through h.ReadHead, so a FIFO cannot hang it and a planted
// final link is not followed (links are resolved first, through h.EvalSymlinks, and
// the real path is what is checked and read). Errors are ErrSetting, and never quote
// the file's content.
func (s Setting) Read(h Host) (value, file string, err error) {
	file = s.Path(h)
	fail := func(format string, a ...any) (string, string, error) {
		return "", file, fmt.Errorf("%w: %s in %s: %s", ErrSetting, s.Key, file, fmt.Sprintf(format, a...))
	}
	if h.ReadHead == nil {
		return fail("the host's files cannot be read")
	}
	real := file
	if h.EvalSymlinks != nil {
		r, err := h.EvalSymlinks(file)
		if errors.Is(err, fs.ErrNotExist) {
			return "", file, nil
		}
		if err != nil {
			return fail("resolving its path: %v", err)
		}
		real = r
	}
	if h.Project != "" && within(real, h.Project) {
		return fail("it lies in the project (%s), where the sandbox can write it", real)
	}
	b, err := h.ReadHead(real, settingMax+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", file, nil
	case err != nil:
		return fail("it cannot be read as a regular file (%v)", err)
	case len(b) > settingMax:
		return fail("it is larger than %d MiB", settingMax>>20)
	}
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return fail("it is not valid TOML (line %d, column %d)", row, col)
		}
		return fail("it is not valid TOML")
	}
	v, ok := doc[s.Key]
	if !ok {
		return "", file, nil
	}
	str, ok := v.(string)
	if !ok {
		return fail("it is a %T, not a string", v)
	}
	return str, file, nil
}

// BaseURL returns the endpoint the tool sends k to when not its default (Host), as
// the tool reads it on h, and what set it, for people ("OPENAI_BASE_URL",
// "openai_base_url in /home/u/.codex/config.toml"); "" when nothing does. An error is
// a Setting that cannot be read (ErrSetting).
func (k Key) BaseURL(h Host) (raw, from string, err error) {
	if k.BaseURLEnv != "" {
		if v := h.Env[k.BaseURLEnv]; v != "" {
			return v, k.BaseURLEnv, nil
		}
	}
	if k.BaseURLSetting == nil {
		return "", "", nil
	}
	v, file, err := k.BaseURLSetting.Read(h)
	if err != nil || v == "" {
		return "", "", err
	}
	return v, k.BaseURLSetting.Key + " in " + file, nil
}
